/* test_anna_map.c — anna_collision_counts, the collision map `./train inspect
 * --anna` draws: for both hash families, causal and not, on random q, k, v
 *   - counts are whole numbers in [0, ℓ], zero above the diagonal when causal;
 *   - the normalised rows (counts / row total, or all zero) sum to 1 or 0, and
 *     0 exactly when anna_attention's output row is 0 (an empty union);
 *   - those weights times v equal anna_attention's output to 1e-5. */
#include "check.h"
#include "attnlab/anna/anna.h"
#include "attnlab/util/rng.h"

#include <math.h>
#include <stdlib.h>

static void check_map(LshFamily family, int tables, int funcs, int causal) {
    enum { N = 24, D = 8, DV = 5 };
    Lsh lsh;
    AlError err = {0};
    CHECK(lsh_init(&lsh, family, D, tables, funcs, 77 + (uint64_t)tables, &err) == 0, "lsh_init: %s", err.msg);
    Rng r = rng_stream(5, (uint64_t)(tables * 10 + funcs + causal));
    float q[N * D], k[N * D], v[N * DV], out[N * DV];
    for (int i = 0; i < N * D; i++) q[i] = (float)rng_normal(&r), k[i] = (float)rng_normal(&r);
    for (int i = 0; i < N * DV; i++) v[i] = (float)rng_normal(&r);
    /* some queries equal to keys, so buckets are shared for sure */
    for (int c = 0; c < D; c++) q[5 * D + c] = k[2 * D + c], q[9 * D + c] = k[9 * D + c];
    int counts[N * N];
    anna_collision_counts(&lsh, q, k, N, D, causal, counts);
    anna_attention(&lsh, q, k, v, N, D, DV, causal, out, NULL, NULL);
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < N; i++) {
        long total = 0;
        for (int j = 0; j < N; j++) {
            int c = counts[i * N + j];
            bad += c < 0 || c > tables || (causal && j > i && c != 0);
            total += c;
        }
        double wsum = 0;
        for (int j = 0; j < N; j++) wsum += total ? (double)counts[i * N + j] / total : 0;
        CHECK(fabs(wsum - (total ? 1.0 : 0.0)) < 1e-9, "row %d of the weights sums to %g", i, wsum);
        for (int c = 0; c < DV; c++) {
            double y = 0;
            for (int j = 0; j < N; j++) y += total ? (double)counts[i * N + j] / total * v[j * DV + c] : 0;
            if (fabs(y - out[i * DV + c]) > worst) worst = fabs(y - out[i * DV + c]);
        }
    }
    CHECK(!bad, "%d counts outside [0, %d] (or above the diagonal of a causal map)", bad, tables);
    CHECK(worst < 1e-5, "%s l=%d z=%d causal=%d: weights x v differs from anna_attention by %g",
          lsh_family_name(family), tables, funcs, causal, worst);
    CHECK(counts[9 * N + 9] == tables, "a query equal to its key collides in %d of %d tables", counts[9 * N + 9], tables);
    lsh_free(&lsh);
}

int main(void) {
    for (int causal = 0; causal < 2; causal++) {
        check_map(LSH_HYPERPLANE, 6, 2, causal);
        check_map(LSH_HYPERPLANE, 3, 5, causal);
        check_map(LSH_CROSSPOLYTOPE, 4, 1, causal);
        check_map(LSH_CROSSPOLYTOPE, 2, 2, causal);
    }
    return check_exit("test_anna_map");
}
