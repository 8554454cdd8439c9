// shard.c: rank checks, scalar reductions and state sharding for data-parallel training.
#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The first "name=value;" pair where a and b differ, as "name a_value vs b_value".
static void first_difference(const char *a, const char *b, char *out, size_t n) {
    while (*a && *b) {
        size_t la = strcspn(a, ";"), lb = strcspn(b, ";");
        if (la != lb || memcmp(a, b, la) != 0) {
            size_t name = strcspn(a, "=");
            if (name > la) name = la;
            size_t va = la > name ? la - name - 1 : 0, vb = lb > name ? lb - name - 1 : 0;
            snprintf(out, n, "%.*s %.*s vs %.*s", (int)name, a, (int)va, a + name + 1, (int)vb, b + name + 1);
            return;
        }
        a += la + (a[la] == ';'), b += lb + (b[lb] == ';');
    }
    snprintf(out, n, "the option lists differ in length");
}

// Collective: every rank's record (n bytes at mine) into *all on rank 0, rank r's at r*n
// (*all: NULL on the other ranks; the caller frees it). A failed allocation is agreed.
static sk_status gather_at_root(sk_comm *c, const void *mine, size_t n, void **all, sk_error *err) {
    *all = sk_comm_rank(c) == 0 ? calloc((size_t)sk_comm_size(c), n) : NULL;
    sk_status st = sk_comm_rank(c) == 0 && !*all ? sk_fail(err, SK_ERR_NOMEM, "out of memory") : SK_OK;
    if ((st = sk_comm_agree(c, st, err)) == SK_OK) st = sk_comm_gather(c, mine, *all, n, 0, err);
    if (st != SK_OK) free(*all), *all = NULL;
    return st;
}

sk_status sk_shard_check_ranks(sk_comm *c, const sk_rank_identity *mine, sk_error *err) {
    const int size = sk_comm_size(c), rank = sk_comm_rank(c);
    sk_rank_identity me = *mine, *all;
    me.data_path[sizeof me.data_path - 1] = me.options[sizeof me.options - 1] = '\0';
    sk_status st = gather_at_root(c, &me, sizeof me, (void **)&all, err);
    for (int r = 1; st == SK_OK && rank == 0 && r < size; r++) {
        const sk_rank_identity *o = &all[r];
        if (o->n_chars != me.n_chars || o->data_crc != me.data_crc)
            st = sk_fail(err, SK_ERR_MISMATCH,
                         "rank %d read other data than rank 0: %s has %llu characters (crc32 %08x) there, %s has "
                         "%llu (crc32 %08x) on rank 0; every rank must read the same file",
                         r, o->data_path, (unsigned long long)o->n_chars, o->data_crc, me.data_path,
                         (unsigned long long)me.n_chars, me.data_crc);
        else if (o->vocab_size != me.vocab_size || o->vocab_crc != me.vocab_crc)
            st = sk_fail(err, SK_ERR_MISMATCH, "rank %d has another vocabulary than rank 0 (%d vs %d characters)", r,
                         (int)o->vocab_size, (int)me.vocab_size);
        else if (strcmp(o->options, me.options) != 0) {
            char d[512];
            first_difference(o->options, me.options, d, sizeof d);
            st = sk_fail(err, SK_ERR_MISMATCH,
                         "rank %d runs other options than rank 0 (%s); every rank must run the same command", r, d);
        }
    }
    free(all);
    return sk_comm_agree(c, st, err);
}

// The first pair of ranks whose devices clash, named in err; SK_OK when none does.
static sk_status devices_clash(const sk_rank_device *all, int size, sk_error *err) {
    for (int r = 1; r < size; r++) {
        if (strcmp(all[r].backend, all[0].backend) != 0)
            return sk_fail(err, SK_ERR_MISMATCH,
                           "rank %d runs on %s, rank 0 on %s: every rank must run the same backend (with --device "
                           "auto, every node needs a usable GPU for each of its ranks)",
                           r, all[r].device, all[0].device);
        for (int q = 0; q < r && all[r].uuid[0]; q++)
            if (strcmp(all[r].uuid, all[q].uuid) == 0)
                return sk_fail(err, SK_ERR_MISMATCH,
                               "ranks %d and %d run on the same GPU (%s, %s): NCCL needs a GPU per rank; start at "
                               "most as many ranks on a node as it has GPUs",
                               q, r, all[r].device, all[r].uuid);
    }
    return SK_OK;
}

sk_status sk_shard_check_devices(sk_comm *c, const sk_rank_device *mine, sk_error *err) {
    sk_rank_device me = *mine, *all;
    me.backend[sizeof me.backend - 1] = me.device[sizeof me.device - 1] = me.uuid[sizeof me.uuid - 1] = '\0';
    sk_status st = gather_at_root(c, &me, sizeof me, (void **)&all, err);
    if (st == SK_OK && sk_comm_rank(c) == 0) st = devices_clash(all, sk_comm_size(c), err);
    free(all);
    return sk_comm_agree(c, st, err);
}

sk_status sk_shard_check_same(sk_comm *c, uint32_t crc, int64_t step, sk_error *err) {
    const int size = sk_comm_size(c), rank = sk_comm_rank(c);
    uint32_t *all;
    sk_status st = gather_at_root(c, &crc, sizeof crc, (void **)&all, err);
    for (int r = 1; st == SK_OK && rank == 0 && r < size; r++)
        if (all[r] != all[0])
            st = sk_fail(err, SK_ERR_MISMATCH,
                         "rank %d holds other parameters or optimizer state than rank 0 at step %lld (crc32 %08x vs "
                         "%08x): the ranks computed differently (different GPU models, drivers or libraries?); "
                         "nothing was written",
                         r, (long long)step, all[r], all[0]);
    free(all);
    return sk_comm_agree(c, st, err);
}

sk_status sk_shard_reduce(sk_comm *c, sk_status st, double *v, int n, sk_error *err) {
    double buf[16];
    if (n > 15) return sk_fail(err, SK_ERR_ARG, "sk_shard_reduce takes at most 15 values, got %d", n);
    memcpy(buf, v, sizeof(double) * (size_t)n);
    buf[n] = st != SK_OK;
    sk_error local = {{0}};
    sk_status cst = sk_comm_allreduce_sum_f64(c, buf, (size_t)n + 1, &local);
    if (cst != SK_OK) {
        if (err) *err = local;
        return cst;
    }
    if (buf[n] > 0.0) return sk_comm_agree(c, st == SK_OK ? SK_OK : st, err);
    memcpy(v, buf, sizeof(double) * (size_t)n);
    return SK_OK;
}

void sk_shard_slice_state(const float *global, float *local, int L, int B, int off, int b, int H) {
    for (int k = 0; k < L; k++)
        memcpy(local + (size_t)k * b * H, global + ((size_t)k * B + off) * H, sizeof(float) * (size_t)b * H);
}

sk_status sk_shard_gather_state(sk_comm *c, const float *local, float *scratch, float *global, int L, int B, int b,
                                int H, int root, sk_error *err) {
    const size_t per_rank = (size_t)L * b * H;
    sk_status st = sk_comm_gather(c, local, scratch, sizeof(float) * per_rank, root, err);
    if (st != SK_OK || sk_comm_rank(c) != root) return st;
    for (int r = 0; r < sk_comm_size(c); r++)
        for (int k = 0; k < L; k++)
            memcpy(global + ((size_t)k * B + (size_t)r * b) * H, scratch + (size_t)r * per_rank + (size_t)k * b * H,
                   sizeof(float) * (size_t)b * H);
    return SK_OK;
}
