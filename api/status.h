/* The engine's codes, stop reasons (engine/decode.h) and tool choices (engine/tool_choice.h) are
 * the public ones (include/pocketflash.h) value for value: a status travels up unchanged. */
#ifndef PF_API_STATUS_H
#define PF_API_STATUS_H

#include "engine/decode.h"
#include "engine/tool_choice.h"
#include "include/pocketflash.h"

_Static_assert(PF_RC_OK == (int)PF_OK && PF_RC_IO == (int)PF_ERR_IO && PF_RC_FORMAT == (int)PF_ERR_FORMAT &&
                   PF_RC_ARG == (int)PF_ERR_ARG && PF_RC_CONTEXT == (int)PF_ERR_CONTEXT &&
                   PF_RC_UTF8 == (int)PF_ERR_UTF8 && PF_RC_OOM == (int)PF_ERR_OOM &&
                   PF_RC_INTERNAL == (int)PF_ERR_INTERNAL && PF_RC_CANCELLED == (int)PF_ERR_CANCELLED,
               "engine codes are the public status codes");
_Static_assert(PF_END_EOT == (int)PF_STOP_EOT && PF_END_LENGTH == (int)PF_STOP_LENGTH &&
                   PF_END_CONTEXT == (int)PF_STOP_CONTEXT && PF_END_CALLBACK == (int)PF_STOP_CALLBACK,
               "engine stop reasons are the public ones");

_Static_assert(PF_TOOLS_AUTO == (int)PF_TOOL_AUTO && PF_TOOLS_NONE == (int)PF_TOOL_NONE &&
                   PF_TOOLS_REQUIRED == (int)PF_TOOL_REQUIRED && PF_TOOLS_NAMED == (int)PF_TOOL_NAMED,
               "engine tool choices are the public ones");

static inline pf_status pf_api_status(pf_rc rc) { return (pf_status)rc; }

#endif
