/* OpenAI tool calling in Qwen3's chat template: the tools a request offers (checked, each as the
 * template's `tojson` writes it), the system turn that lists them, a call as an assistant turn
 * writes it, the constraint that holds a reply to calls of the listed functions, and the reply's
 * <tool_call> blocks read back. Tool messages of the history are pf_chat_render's (role "tool"). */
#ifndef PF_TOOLS_H
#define PF_TOOLS_H

#include <stddef.h>

#include "engine/chat_msg.h"
#include "formats/grow.h"
#include "formats/status.h"
#include "grammar/schema.h"

typedef struct {
    int n;
    char **name;   /* the function's name: 1 to 64 of a-z A-Z 0-9 _ - (OpenAI's rule) */
    char **text;   /* the tool object as the template writes it (json.dumps: ", " and ": ") */
    char **params; /* its parameters schema, compact JSON (absent: no arguments, "{}") */
} pf_tools;

/* An OpenAI tools array ([{"type": "function", "function": {"name", "description"?,
 * "parameters"?}}, ...]) into t. PF_RC_OK, or PF_RC_ARG naming the tool and field at fault
 * ("tools[1].function.name: ..."), or PF_RC_OOM; t needs pf_tools_free either way. */
pf_rc pf_tools_parse(const char *json, size_t len, pf_tools *t, char err[PF_ERR_LEN]);
void pf_tools_free(pf_tools *t);
/* The index of the tool named name, -1 when none. */
int pf_tools_find(const pf_tools *t, const char *name);

/* The system turn's content with tools, as Qwen3's template writes it: system and a blank line
 * (when system is not NULL), then the "# Tools" section listing each tool's text inside <tools>
 * and the instruction to answer with <tool_call> blocks. malloc'd, NULL when out of memory. */
char *pf_tools_system(const pf_tools *t, const char *system);
/* The conversation messages[0..n) with the tools of tools_json (an OpenAI tools array) listed in
 * its system turn: *out (malloc'd, *n_out messages) is messages with the first one, when it is a
 * system message, replaced by one whose content is pf_tools_system's (*system, malloc'd), else that
 * system message put first. The strings of messages are shared. PF_RC_OK, pf_tools_parse's
 * PF_RC_ARG, or PF_RC_OOM, with err. */
pf_rc pf_tools_chat(const char *tools_json, const pf_chat_msg *messages, int n, pf_chat_msg **out, int *n_out,
                    char **system, char err[PF_ERR_LEN]);
/* One call as the template writes it into an assistant turn:
 * "<tool_call>\n{\"name\": \"NAME\", \"arguments\": ARGUMENTS}\n</tool_call>". */
void pf_tool_call_put(pf_sbuf *b, const char *name, const char *arguments);

/* The constraint of a reply that must call a tool: one <tool_call> block (its text as
 * pf_tool_call_put writes it) calling the tool named `only` (NULL: any listed tool, at most
 * PF_SCHEMA_MAX_WRAPS of them) with arguments valid against that tool's parameters. PF_RC_OK,
 * PF_RC_ARG naming the tool whose parameters the matcher cannot enforce (or too many tools, or
 * `only` not listed), PF_RC_OOM. */
pf_rc pf_tools_schema(const pf_tools *t, const char *only, pf_schema **out, char err[PF_ERR_LEN]);

/* One call read back from a reply: its function's name and its arguments as JSON text (an object,
 * written as json.dumps writes it). */
typedef struct {
    char *name;
    char *arguments;
} pf_parsed_call;

/* The <tool_call> blocks of a reply, as Qwen3's tool parser reads them: each block holds a JSON
 * object with a string "name" and an object "arguments"; blocks follow each other with only white
 * space between and after them. *content_len: the text before the first block, trailing white space
 * dropped (the whole text when there are no calls). A reply with no block, a block that does not
 * parse or is unterminated has no calls: all of it is content. PF_RC_OK or PF_RC_OOM. */
pf_rc pf_tool_calls_parse(const char *text, size_t len, pf_parsed_call **calls, int *n_calls, size_t *content_len);
void pf_tool_calls_free(pf_parsed_call *calls, int n);

#endif
