/* One message of a conversation as the engine takes it (the chat template renders a list of them:
 * engine/chat.h); api/ turns the public pf_message into it field for field. */
#ifndef PF_CHAT_MSG_H
#define PF_CHAT_MSG_H

/* role "system", "user", "assistant" or "tool" (a tool's result). */
typedef struct {
    const char *role;
    const char *content;
} pf_chat_msg;

#endif
