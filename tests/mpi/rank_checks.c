// rank_checks.c: runs the data-parallel consistency checks of src/distributed/shard.c under mpirun
// with made-up inputs, for tests/mpi/test_mpi_rank_checks.sh: the cases a real job can reach
// only on machines we do not have (a rank without a GPU beside GPU ranks; two ranks on one
// GPU; ranks whose parameters drifted apart). Every rank prints one line per case,
// "CASE rank R: ok" or "CASE rank R: [<status>] <message>", so the script can check that every
// rank got the same verdict and rank 0's message.
// Usage (each rank): mpirun -np N rank_checks
#include <stdio.h>
#include <string.h>

#include "distributed/shard.h"
#include "shakespeare/comm.h"

static void report(const char *name, int rank, sk_status st, const sk_error *err) {
    if (st == SK_OK) printf("%s rank %d: ok\n", name, rank);
    else printf("%s rank %d: [%s] %s\n", name, rank, sk_status_str(st), err->msg);
    fflush(stdout);
}

// A GPU rank's record: cuda:index on the GPU whose UUID ends in gpu.
static sk_rank_device gpu(int index, int gpu_id) {
    sk_rank_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.backend, sizeof d.backend, "cuda");
    snprintf(d.device, sizeof d.device, "cuda:%d (Test GPU)", index);
    snprintf(d.uuid, sizeof d.uuid, "GPU-00000000-0000-0000-0000-%012d", gpu_id);
    return d;
}

int main(int argc, char **argv) {
    sk_comm *c = NULL;
    sk_error err = {{0}};
    if (sk_comm_init(&c, &argc, &argv, NULL, 0, &err) != SK_OK) {
        fprintf(stderr, "rank_checks: %s\n", err.msg);
        return 1;
    }
    const int rank = sk_comm_rank(c), size = sk_comm_size(c);
    sk_rank_device cpu;
    memset(&cpu, 0, sizeof cpu);
    snprintf(cpu.backend, sizeof cpu.backend, "cpu");
    snprintf(cpu.device, sizeof cpu.device, "cpu");

    sk_rank_device d = gpu(rank, rank); // one GPU each
    report("own-gpus", rank, sk_shard_check_devices(c, &d, &err), &err);
    report("all-cpu", rank, sk_shard_check_devices(c, &cpu, &err), &err);
    d = rank == size - 1 ? cpu : gpu(rank, rank); // the last rank found no GPU
    report("cpu-beside-gpus", rank, sk_shard_check_devices(c, &d, &err), &err);
    d = gpu(rank == size - 1 ? 0 : rank, rank == size - 1 ? 0 : rank); // the last rank on rank 0's GPU
    report("shared-gpu", rank, sk_shard_check_devices(c, &d, &err), &err);
    d = gpu(0, 7); // a GPU each, but every rank sees its own as cuda:0... with the same UUID
    report("same-uuid", rank, sk_shard_check_devices(c, &d, &err), &err);

    report("same-model", rank, sk_shard_check_same(c, 0x1234abcdu, 30, &err), &err);
    report("drifted-model", rank, sk_shard_check_same(c, rank == size - 1 ? 0x1234abceu : 0x1234abcdu, 30, &err),
           &err);
    sk_comm_free(c);
    return 0;
}
