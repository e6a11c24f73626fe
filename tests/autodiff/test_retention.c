/* test_retention.c — ad_retention's parallel form against the recurrent form of
 * retention (Sun et al. 2023, "Retentive Network", eq. 6 with the normalisations
 * of §2.2), written here from the paper in double, independently of the op:
 *   q̃_n = Θ_n q_n,  k̃_n = Θ_n k_n / √Dk   (pairs (2i, 2i+1) turned by n·θ_i,
 *                                          θ_i = 10000^(−i/(Dk/2 − 1)))
 *   S_n = γ S_{n−1} + k̃_nᵀ v_n,   z_n = γ z_{n−1} + k̃_n,   γ = 1 − 2^(−5−h)
 *   o_n = c_n q̃_n S_n / max(|c_n q̃_n·z_n|, 1),   c_n = 1/√(Σ_{i≤n} γ^i)
 * Outputs must agree to 1e-5 relative to the output's scale (max |o|, at least 1),
 * at inputs small enough that every |s_n| < 1 and large enough that over a
 * quarter exceed 1, over 40 positions and up to four heads (decays 31/32 … 255/256). */
#include "check.h"
#include "attnlab/autodiff/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Case { int B, T, H, Dk, Dv; float range; uint64_t seed; } Case;

static void rotate(const float *x, double *y, int Dk, int n, double scale) {
    int half = Dk / 2;
    for (int i = 0; i < half; i++) {
        double th = half > 1 ? pow(10000.0, -(double)i / (half - 1)) : 1.0, c = cos(n * th), s = sin(n * th);
        y[2 * i] = scale * (x[2 * i] * c - x[2 * i + 1] * s);
        y[2 * i + 1] = scale * (x[2 * i + 1] * c + x[2 * i] * s);
    }
}

/* The recurrent form over one (b, h); o (T, Dv) at stride ldv. */
static void recurrent(const Case *c, const float *q, const float *k, const float *v, int h, double *o,
                      int *above) {
    int ldk = c->H * c->Dk, ldv = c->H * c->Dv;
    double g = 1.0 - pow(2.0, -5.0 - h), sum_pow = 0;
    double *S = calloc((size_t)c->Dk * c->Dv, sizeof *S), *z = calloc((size_t)c->Dk, sizeof *z);
    double qr[16], kr[16];
    for (int n = 0; n < c->T; n++) {
        sum_pow = g * sum_pow + 1.0;
        double cn = 1.0 / sqrt(sum_pow), s = 0;
        rotate(q + (size_t)n * ldk + h * c->Dk, qr, c->Dk, n, 1.0);
        rotate(k + (size_t)n * ldk + h * c->Dk, kr, c->Dk, n, 1.0 / sqrt(c->Dk));
        const float *vn = v + (size_t)n * ldv + h * c->Dv;
        for (int a = 0; a < c->Dk; a++) {
            z[a] = g * z[a] + kr[a];
            s += cn * qr[a] * z[a];
            for (int e = 0; e < c->Dv; e++) S[a * c->Dv + e] = g * S[a * c->Dv + e] + kr[a] * vn[e];
        }
        double den = fmax(fabs(s), 1.0);
        *above += fabs(s) > 1.0;
        for (int e = 0; e < c->Dv; e++) {
            double acc = 0;
            for (int a = 0; a < c->Dk; a++) acc += qr[a] * S[a * c->Dv + e];
            o[(size_t)n * ldv + e] = cn * acc / den;
        }
    }
    free(S);
    free(z);
}

static void fill(Tensor *x, Rng *r, float range) {
    for (long i = 0; i < x->n; i++) x->data[i] = (float)(range * (2.0 * rng_uniform(r) - 1.0));
}

static void check_case(const Case *c) {
    Arena arena;
    arena_init(&arena, 1u << 20);
    Tape t;
    tape_init(&t, &arena);
    t.grad_enabled = 0;
    Tensor *q = tape_tensor(&t, 0, 3, (int[]){c->B, c->T, c->H * c->Dk});
    Tensor *k = tape_tensor(&t, 0, 3, (int[]){c->B, c->T, c->H * c->Dk});
    Tensor *v = tape_tensor(&t, 0, 3, (int[]){c->B, c->T, c->H * c->Dv});
    Rng r = rng_stream(c->seed, 7);
    fill(q, &r, c->range);
    fill(k, &r, c->range);
    fill(v, &r, 1.0f);
    Tensor *o = ad_retention(&t, q, k, v, c->H);
    size_t per_b = (size_t)c->T * c->H * c->Dv;
    double *want = calloc((size_t)c->B * per_b, sizeof *want), scale = 1.0, worst = 0;
    int above = 0;
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++)
            recurrent(c, q->data + (size_t)b * c->T * c->H * c->Dk, k->data + (size_t)b * c->T * c->H * c->Dk,
                      v->data + b * per_b, h, want + b * per_b + h * c->Dv, &above);
    for (size_t i = 0; i < c->B * per_b; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < c->B * per_b; i++) worst = fmax(worst, fabs(o->data[i] - want[i]) / scale);
    int rows = c->B * c->H * c->T;
    printf("  B%d T%d H%d Dk%d Dv%d ±%.1f: %3d of %3d rows with |s| > 1, max rel diff %.2e\n", c->B, c->T, c->H,
           c->Dk, c->Dv, (double)c->range, above, rows, worst);
    CHECK(worst <= 1e-5, "parallel vs recurrent retention differ by %.2e", worst);
    CHECK(c->range > 1.0f ? above > rows / 4 : above == 0, "range %.1f: %d of %d rows with |s| > 1",
          (double)c->range, above, rows);
    free(want);
    tape_free(&t);
    arena_free(&arena);
}

int main(void) {
    static const Case cases[] = {
        { 2, 40, 4, 8, 8, 0.3f, 1 },    /* every |s| < 1: the decay weights alone */
        { 2, 40, 4, 8, 8, 2.0f, 2 },    /* many |s| > 1: divided by |s| */
        { 3, 17, 2, 6, 10, 2.0f, 3 },   /* Dk ≠ Dv */
        { 1, 33, 1, 2, 3, 3.0f, 4 },    /* one pair, θ = 1 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
    return check_exit("test_retention");
}
