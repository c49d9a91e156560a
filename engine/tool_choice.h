/* What a reply may do with the tools a request offers (engine/tools.h), OpenAI's tool_choice; the
 * public pf_tool_choice has the same values (api/status.h asserts it). */
#ifndef PF_TOOL_CHOICE_H
#define PF_TOOL_CHOICE_H

/* auto: the reply may call a listed tool; none: it may not (the tools are not listed); required:
 * it must call one; named: it must call the one the request names (the constraint holds the last
 * two to it). */
typedef enum { PF_TOOLS_AUTO = 0, PF_TOOLS_NONE, PF_TOOLS_REQUIRED, PF_TOOLS_NAMED } pf_tools_choice;

#endif
