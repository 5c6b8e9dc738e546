/* ph.watch's reductions of float32 tensors on the CPU in one pass over each (``_native.py``
 * compiles this file once per machine and loads it with ctypes; ``_reduce.py`` is the reference
 * and the fallback, and a test checks both give the same rows).
 *
 * For each tensor, in blocks of BLOCK values (in cache while both loops read them):
 *  - a scalar loop sorts each value into its fine histogram bin, bits 19-30 of |x| (the exponent
 *    and the top four mantissa bits, as ``_reduce._fine_counts``), into two alternating
 *    sub-histograms (so runs of one magnitude do not wait on the same counter);
 *  - a loop the compiler vectorises sums x, |x| and x*x in float lanes (a block's partial sums,
 *    added into doubles: an error of a few ulps of the block) and keeps the minimum and maximum;
 *    a NaN or Inf makes its block's sums non-finite, and that block is summed again over its
 *    finite values only, counting the NaN and Inf values from their bits.
 * Exact zeros share fine bin 0 with the tiniest subnormals: they are counted, in a pass of their
 * own, only when that bin is not empty.
 * The variance is the sum of squares' minus the squared mean, unless the mean is large beside
 * the spread (then that subtraction would cancel): a second pass sums (x - mean)^2 for those.
 *
 * Built without -ffast-math (it would set flush-to-zero for the whole training process): the
 * flags allow reassociating the block sums and nothing else (see ``_native.FLAGS``); finiteness
 * is read from the bits, never from a float comparison, so -ffinite-math-only cannot drop it.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BLOCK 512
#define FINE 4096
#define NSTATS 10 /* min, max, mean, std, l1, l2, nan, inf, zeros, numel (_reduce.STATS) */

static inline uint32_t bits_of(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* Only finite values reach it (the block was checked): so finite math, which lets gcc turn the
 * minimum and maximum into vector min/max, is exact here and assumed nowhere else. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("finite-math-only")))
#endif
static void moments_finite(const float *x, int64_t n, float *s, float *a, float *q, float *lo, float *hi) {
    float ss = 0.0f, aa = 0.0f, qq = 0.0f, mn = x[0], mx = x[0];
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        ss += v;
        aa += fabsf(v);
        qq += v * v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    *s = ss, *a = aa, *q = qq, *lo = mn, *hi = mx;
}

static float sq_dev(const float *x, int64_t n, float mean) {
    float qq = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float d = x[i] - mean;
        qq += d * d;
    }
    return qq;
}

static float sq_dev_finite(const float *x, int64_t n, float mean) {
    float qq = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if ((bits_of(x[i]) & 0x7fffffffu) >= 0x7f800000u)
            continue;
        float d = x[i] - mean;
        qq += d * d;
    }
    return qq;
}

/* One tensor's row: the NSTATS statistics (zero_frac as the share of exact zeros), then its
 * nbins coarse counts: each fine bin added into lut[bin] (nbins: dropped, NaN/Inf), the exact
 * zeros moved from bin 1 (where fine bin 0, zeros and tiny subnormals, lands) to bin 0. */
static void reduce_one(const float *x, int64_t n, const int32_t *lut, int64_t nbins, double *out) {
    uint32_t h0[FINE], h1[FINE];
    memset(h0, 0, sizeof h0);
    memset(h1, 0, sizeof h1);
    double sum = 0.0, l1 = 0.0, sq = 0.0;
    float lo = INFINITY, hi = -INFINITY;
    int64_t zeros = 0, nan = 0, inf = 0;
    for (int64_t at = 0; at < n; at += BLOCK) {
        int64_t m = n - at < BLOCK ? n - at : BLOCK;
        const float *b = x + at;
        int64_t i = 0;
        for (; i + 1 < m; i += 2) {
            h0[(bits_of(b[i]) & 0x7fffffffu) >> 19]++;
            h1[(bits_of(b[i + 1]) & 0x7fffffffu) >> 19]++;
        }
        if (i < m)
            h0[(bits_of(b[i]) & 0x7fffffffu) >> 19]++;
        float s, a, q, mn, mx;
        moments_finite(b, m, &s, &a, &q, &mn, &mx);
        if (isfinite(s) && isfinite(q)) { /* no NaN or Inf in the block (else they would show) */
            sum += s, l1 += a, sq += q;
            lo = mn < lo ? mn : lo;
            hi = mx > hi ? mx : hi;
            continue;
        }
        s = 0.0f, a = 0.0f, q = 0.0f; /* NaN/Inf in it, or a sum past the float range: masked */
        for (i = 0; i < m; i++) {
            uint32_t u = bits_of(b[i]) & 0x7fffffffu;
            if (u >= 0x7f800000u) {
                if (u > 0x7f800000u)
                    nan++;
                else
                    inf++;
                continue;
            }
            float v = b[i];
            s += v, a += fabsf(v), q += v * v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        sum += s, l1 += a, sq += q;
    }
    if (h0[0] + h1[0]) /* fine bin 0 holds the exact zeros and the tiniest subnormals: count */
        for (int64_t i = 0; i < n; i++)
            zeros += (bits_of(x[i]) << 1) == 0;
    double *counts = out + NSTATS;
    for (int64_t c = 0; c < nbins; c++)
        counts[c] = 0.0;
    for (int f = 0; f < FINE; f++) {
        int32_t c = lut[f];
        if (c < nbins)
            counts[c] += (double)h0[f] + (double)h1[f];
    }
    counts[1] -= (double)zeros;
    counts[0] = (double)zeros;
    int64_t finite = n - nan - inf;
    out[6] = (double)nan, out[7] = (double)inf, out[8] = (double)zeros / (double)n, out[9] = (double)n;
    if (finite == 0) {
        for (int k = 0; k < 6; k++)
            out[k] = NAN;
        return;
    }
    double mean = sum / (double)finite, msq = sq / (double)finite, var;
    if (mean * mean > 1e-3 * msq) { /* cancellation: a second pass */
        double dev = 0.0;
        for (int64_t at = 0; at < n; at += BLOCK) {
            int64_t m = n - at < BLOCK ? n - at : BLOCK;
            dev += nan || inf ? sq_dev_finite(x + at, m, (float)mean) : sq_dev(x + at, m, (float)mean);
        }
        double shift = mean - (double)(float)mean; /* the float mean's own error, taken out */
        var = dev / (double)finite - shift * shift;
    } else {
        var = msq - mean * mean;
    }
    out[0] = lo, out[1] = hi, out[2] = mean, out[3] = sqrt(var > 0.0 ? var : 0.0);
    out[4] = l1, out[5] = sqrt(sq);
}

/* k tensors: ptrs[i] holds lens[i] > 0 float32 values; out: k rows of NSTATS + nbins doubles. */
void ph_reduce_f32(int64_t k, const float *const *ptrs, const int64_t *lens, const int32_t *lut, int64_t nbins,
                   double *out) {
    for (int64_t i = 0; i < k; i++)
        reduce_one(ptrs[i], lens[i], lut, nbins, out + i * (NSTATS + nbins));
}
