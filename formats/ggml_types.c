#include "ggml_types.h"

#include <string.h>

static const pf_type_traits k_traits[PF_TYPE_MAX] = {
    [PF_TYPE_F32] = {"f32", 1, 4, 0},
    [PF_TYPE_F16] = {"f16", 1, 2, 0},
    [PF_TYPE_Q4_0] = {"q4_0", PF_QK, sizeof(pf_block_q4_0), 1},
    [PF_TYPE_Q4_1] = {"q4_1", PF_QK, sizeof(pf_block_q4_1), 1},
    [PF_TYPE_Q8_0] = {"q8_0", PF_QK, sizeof(pf_block_q8_0), 1},
    [PF_TYPE_BF16] = {"bf16", 1, 2, 0},
};

const pf_type_traits *pf_type_info(uint32_t type) {
    if (type >= PF_TYPE_MAX || !k_traits[type].name) return NULL;
    return &k_traits[type];
}

const pf_type_traits *pf_tensor_type_info(uint32_t type) {
    static const pf_type_traits i64 = {"i64", 1, 8, 0};
    return type == PF_TYPE_I64 ? &i64 : pf_type_info(type);
}

size_t pf_row_bytes(uint32_t type, int64_t n) {
    const pf_type_traits *t = pf_type_info(type);
    if (!t || n < 0 || n % t->block) return 0;
    return (size_t)(n / t->block) * t->type_size;
}

int pf_type_from_name(const char *name) {
    for (int i = 0; i < PF_TYPE_MAX; i++)
        if (k_traits[i].name && strcmp(k_traits[i].name, name) == 0) return i;
    return -1;
}
