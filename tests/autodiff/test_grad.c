/* test_grad.c — finite-difference gradient checks of every autodiff op.
 *
 *   test_grad OP              run every case for one op (one ctest test per op)
 *   test_grad --all           run every case for every op
 *   test_grad --coverage OPS  fail unless every OpKind has cases and is in OPS
 *                             (the list tests/CMakeLists.txt registers) */
#include "grad_cases.h"

#include <stdio.h>
#include <string.h>

typedef int (*GroupFn)(OpKind op, int *n_cases);
static const GroupFn GROUPS[] = {
    grad_cases_linalg, grad_cases_pointwise, grad_cases_gather,
    grad_cases_norm,   grad_cases_softmax,   grad_cases_attention,
    grad_cases_efficient, grad_cases_lstm, grad_cases_anna,
    grad_cases_mlp,
    grad_cases_dss,
    grad_cases_retnet,
    grad_cases_mamba,
};
#define N_GROUPS (int)(sizeof GROUPS / sizeof GROUPS[0])

int grad_case(const char *label, OpKind op, GcBuildFn build, void *ctx, Tensor **leaves,
              int n_leaves, GcTol tol, int check_fault) {
    int failed = !gradcheck(label, build, ctx, leaves, n_leaves, tol, NULL);
    if (check_fault && !gradcheck_catches_fault(label, op, build, ctx, leaves, n_leaves, tol)) failed++;
    return failed;
}

static int run_op(OpKind op, int *n_cases) {
    int failed = 0;
    *n_cases = 0;
    printf("%s:\n", op_name(op));
    for (int g = 0; g < N_GROUPS; g++) failed += GROUPS[g](op, n_cases);
    return failed;
}

static int find_op(const char *name) {
    for (int op = 0; op < OP_COUNT; op++)
        if (!strcmp(op_name((OpKind)op), name)) return op;
    return -1;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "--coverage")) {
        int bad = 0;
        for (int op = 0; op < OP_COUNT; op++) {
            int listed = 0, n = 0;
            for (int a = 2; a < argc; a++) listed |= !strcmp(argv[a], op_name((OpKind)op));
            /* Counting cases runs them; coverage is cheap enough to afford that. */
            int failed = run_op((OpKind)op, &n);
            if (!listed) { fprintf(stderr, "op %s is not in the test list tests/CMakeLists.txt reads from ops.def\n", op_name((OpKind)op)); bad++; }
            if (n == 0) { fprintf(stderr, "op %s has no gradient check\n", op_name((OpKind)op)); bad++; }
            (void)failed; /* failures are reported by the per-op tests */
        }
        for (int a = 2; a < argc; a++)
            if (find_op(argv[a]) < 0) { fprintf(stderr, "AD_OPS lists unknown op %s\n", argv[a]); bad++; }
        printf("coverage: %d ops, %d problems\n", OP_COUNT, bad);
        return bad ? 1 : 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: test_grad OP | --all | --coverage OPS...\n");
        return 2;
    }
    int total_failed = 0, total_cases = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        if (strcmp(argv[1], "--all") && strcmp(argv[1], op_name((OpKind)op))) continue;
        int n = 0;
        total_failed += run_op((OpKind)op, &n);
        total_cases += n;
        if (n == 0) { fprintf(stderr, "op %s has no gradient check\n", op_name((OpKind)op)); total_failed++; }
    }
    if (total_cases == 0 && strcmp(argv[1], "--all")) {
        fprintf(stderr, "unknown op '%s'\n", argv[1]);
        return 2;
    }
    printf("%d cases, %d failures\n", total_cases, total_failed);
    return total_failed ? 1 : 0;
}
