/* JNI side of org.pocketflash.PocketFlash (bindings/android/java): each native method is one call
 * of the public C API (include/pocketflash.h). Handles cross as jlong; text crosses as UTF-8 byte
 * arrays, because JNI's own string functions speak modified UTF-8, which differs from UTF-8 for
 * characters outside the BMP. A failure throws PocketFlash.PocketFlashException with the library's
 * message. The text callback calls back into Java on the same thread; an exception it throws stops
 * the generation and is left pending, so Java sees it when the native method returns. */
#include <jni.h>
#include <pocketflash.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JNI_FN(name) Java_org_pocketflash_PocketFlash_##name

/* PocketFlashException(message, status name): the library's message and pf_status_name(st). */
static void throw_pf(JNIEnv *env, pf_status st, const char *msg) {
    jclass c = (*env)->FindClass(env, "org/pocketflash/PocketFlash$PocketFlashException");
    jmethodID init = c ? (*env)->GetMethodID(env, c, "<init>", "(Ljava/lang/String;Ljava/lang/String;)V") : NULL;
    jstring m = init ? (*env)->NewStringUTF(env, msg && *msg ? msg : "pocketflash: unknown error") : NULL;
    jstring n = m ? (*env)->NewStringUTF(env, pf_status_name(st)) : NULL;
    jobject e = n ? (*env)->NewObject(env, c, init, m, n) : NULL;
    if (e) (*env)->Throw(env, (jthrowable)e);
}

/* A Java byte[] as a NUL-terminated C string (malloc'd; NULL for a null array, or with an
 * exception pending when out of memory). */
static char *bytes_dup(JNIEnv *env, jbyteArray a, size_t *len) {
    if (!a) return NULL;
    jsize n = (*env)->GetArrayLength(env, a);
    char *s = malloc((size_t)n + 1);
    if (!s) {
        throw_pf(env, PF_ERR_OOM, "out of memory");
        return NULL;
    }
    (*env)->GetByteArrayRegion(env, a, 0, n, (jbyte *)s);
    s[n] = 0;
    if (len) *len = (size_t)n;
    return s;
}

static jlong to_j(const void *p) { return (jlong)(intptr_t)p; }
/* A new object's handle, or 0 with the library's message thrown. */
static jlong handle_or_throw(JNIEnv *env, pf_status st, const void *p, const char *err) {
    if (st != PF_OK || !p) throw_pf(env, st, err);
    return to_j(p);
}
#define FROM_J(type, h) ((type *)(intptr_t)(h))

/* pf_load_model_with: kernels NULL for the default level, repack and hugepages 1 / -1 / 0 as
 * pf_load_params takes them. */
JNIEXPORT jlong JNICALL JNI_FN(nativeLoadModel)(JNIEnv *env, jclass cls, jbyteArray path, jbyteArray kernels, jint repack,
                                                jint hugepages) {
    (void)cls;
    char err[PF_ERR_LEN] = "", *p = bytes_dup(env, path, NULL);
    if (!p) {
        if (!(*env)->ExceptionCheck(env)) throw_pf(env, PF_ERR_ARG, "model path is null");
        return 0;
    }
    char *k = bytes_dup(env, kernels, NULL);
    if ((*env)->ExceptionCheck(env)) {
        free(p);
        return 0;
    }
    pf_load_params lp = {.kernels = k, .repack = repack, .hugepages = hugepages};
    pf_model *m = NULL;
    pf_status st = pf_load_model_with(p, &lp, &m, err);
    free(k);
    free(p);
    return handle_or_throw(env, st, m, err);
}

JNIEXPORT void JNICALL JNI_FN(nativeFreeModel)(JNIEnv *env, jclass cls, jlong h) {
    (void)env, (void)cls;
    pf_free_model(FROM_J(pf_model, h));
}

JNIEXPORT jlong JNICALL JNI_FN(nativeLoadDraft)(JNIEnv *env, jclass cls, jlong model, jbyteArray path) {
    (void)cls;
    char err[PF_ERR_LEN] = "", *p = bytes_dup(env, path, NULL);
    if ((*env)->ExceptionCheck(env)) return 0;
    pf_draft *d = NULL;
    pf_status st = pf_load_draft(FROM_J(pf_model, model), p, &d, err); /* NULL path: the bundled draft */
    free(p);
    return handle_or_throw(env, st, d, err);
}

JNIEXPORT void JNICALL JNI_FN(nativeFreeDraft)(JNIEnv *env, jclass cls, jlong h) {
    (void)env, (void)cls;
    pf_free_draft(FROM_J(pf_draft, h));
}

JNIEXPORT jint JNICALL JNI_FN(nativeDraftBlockSize)(JNIEnv *env, jclass cls, jlong h) {
    (void)env, (void)cls;
    return pf_draft_block_size(FROM_J(pf_draft, h));
}

JNIEXPORT jlong JNICALL JNI_FN(nativeSessionNew)(JNIEnv *env, jclass cls, jlong model, jint threads, jlong n_ctx) {
    (void)cls;
    char err[PF_ERR_LEN] = "";
    pf_session_params sp = {.n_threads = threads, .n_ctx = n_ctx};
    pf_session *s = NULL;
    pf_status st = pf_session_new(FROM_J(pf_model, model), &sp, &s, err);
    return handle_or_throw(env, st, s, err);
}

JNIEXPORT void JNICALL JNI_FN(nativeSessionFree)(JNIEnv *env, jclass cls, jlong h) {
    (void)env, (void)cls;
    pf_session_free(FROM_J(pf_session, h));
}

JNIEXPORT void JNICALL JNI_FN(nativeSessionReset)(JNIEnv *env, jclass cls, jlong h) {
    (void)env, (void)cls;
    pf_session_reset(FROM_J(pf_session, h));
}

typedef struct {
    JNIEnv *env;
    jobject sink;
    jmethodID on_bytes;
} jni_sink;

static int on_text(void *user, const char *text, size_t len) {
    jni_sink *k = user;
    JNIEnv *env = k->env;
    jbyteArray a = (*env)->NewByteArray(env, (jsize)len);
    if (!a) return -1; /* out of memory: nothing more can reach Java */
    (*env)->SetByteArrayRegion(env, a, 0, (jsize)len, (const jbyte *)text);
    jboolean stop = (*env)->CallBooleanMethod(env, k->sink, k->on_bytes, a);
    (*env)->DeleteLocalRef(env, a);
    return (*env)->ExceptionCheck(env) ? -1 : stop; /* its exception cancels; true stops */
}

/* The conversation roles[i] / contents[i] as pf_message (strings malloc'd); -1 with an exception. */
static int messages_dup(JNIEnv *env, jobjectArray roles, jobjectArray contents, pf_message **out, int *n) {
    *n = roles ? (*env)->GetArrayLength(env, roles) : 0;
    if (!contents || (*env)->GetArrayLength(env, contents) != *n) {
        throw_pf(env, PF_ERR_ARG, "chat: roles and contents differ in length");
        return -1;
    }
    *out = calloc((size_t)(*n ? *n : 1), sizeof **out);
    if (!*out) {
        throw_pf(env, PF_ERR_OOM, "out of memory");
        return -1;
    }
    for (int i = 0; i < *n; i++) {
        jbyteArray r = (*env)->GetObjectArrayElement(env, roles, i), c = (*env)->GetObjectArrayElement(env, contents, i);
        (*out)[i].role = bytes_dup(env, r, NULL);
        (*out)[i].content = bytes_dup(env, c, NULL);
        if (!(*out)[i].role || !(*out)[i].content) {
            if (!(*env)->ExceptionCheck(env)) throw_pf(env, PF_ERR_ARG, "chat: a null message");
            return -1;
        }
    }
    return 0;
}

static void messages_free(pf_message *m, int n) {
    for (int i = 0; m && i < n; i++) {
        free((char *)m[i].role);
        free((char *)m[i].content);
    }
    free(m);
}

/* ip: max_tokens, spec, block, top_k, chat, stop_at_eot; fp: temp, top_p; stats: see PocketFlash.Stats. */
JNIEXPORT void JNICALL JNI_FN(nativeGenerate)(JNIEnv *env, jclass cls, jlong session, jbyteArray prompt, jobjectArray roles,
                                        jobjectArray contents, jintArray ip, jfloatArray fp, jlong draft, jlong seed,
                                        jobject sink, jdoubleArray stats_out, jobjectArray strategy_out) {
    (void)cls;
    jint iv[6];
    jfloat fv[2];
    (*env)->GetIntArrayRegion(env, ip, 0, 6, iv);
    (*env)->GetFloatArrayRegion(env, fp, 0, 2, fv);
    if ((*env)->ExceptionCheck(env)) return;
    pf_gen_params p;
    pf_gen_params_default(&p);
    p.max_tokens = iv[0];
    p.spec = (pf_spec_kind)iv[1];
    p.block = iv[2];
    p.top_k = iv[3];
    p.chat = iv[4] != 0;
    p.stop_at_eot = iv[5] != 0;
    p.temp = fv[0];
    p.top_p = fv[1];
    p.seed = (uint64_t)seed;
    p.draft = FROM_J(const pf_draft, draft);

    jclass sc = (*env)->GetObjectClass(env, sink);
    jni_sink k = {env, sink, (*env)->GetMethodID(env, sc, "onBytes", "([B)Z")};
    if (!k.on_bytes) return;
    char err[PF_ERR_LEN] = "";
    pf_gen_stats st;
    memset(&st, 0, sizeof st);
    pf_status r;
    if (prompt) {
        size_t len = 0;
        char *text = bytes_dup(env, prompt, &len);
        if (!text) return;
        r = pf_generate(FROM_J(pf_session, session), text, len, &p, on_text, &k, &st, err);
        free(text);
    } else {
        pf_message *m = NULL;
        int n = 0;
        if (messages_dup(env, roles, contents, &m, &n) < 0) {
            messages_free(m, n);
            return;
        }
        r = pf_generate_chat(FROM_J(pf_session, session), m, n, &p, on_text, &k, &st, err);
        messages_free(m, n);
    }
    if ((*env)->ExceptionCheck(env)) return; /* the callback's own exception */
    if (r != PF_OK) {
        throw_pf(env, r, err);
        return;
    }
    jdouble v[15] = {st.n_prompt, st.n_gen, st.n_reused, st.n_cached, st.prefill_s, st.ttft_s, st.decode_s,
                     st.stop, st.block, (jdouble)st.rounds, (jdouble)st.round_tokens, (jdouble)st.drafted,
                     (jdouble)st.accepted, st.tau, st.acceptance};
    (*env)->SetDoubleArrayRegion(env, stats_out, 0, 15, v);
    /* the drafter and the strategy that ran */
    const char *names[2] = {st.drafter ? st.drafter : "plain", st.spec ? st.spec : "plain"};
    for (int i = 0; i < 2; i++) {
        jstring name = (*env)->NewStringUTF(env, names[i]);
        if (!name) return;
        (*env)->SetObjectArrayElement(env, strategy_out, i, name);
    }
}
