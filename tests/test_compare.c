/* tt_compare, the units' judge of a GPU output against its CPU twin, on the CPU: a floor on the
 * norm the whole tensor's error is taken against (the attention's dg, du, dv and dP, sums over
 * sequences that can cancel below their parts) holds a cancelled sum to its parts' size, lets a
 * zeroed or non-finite output fail still, and at 0, or below the reference's own norm, changes
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "unit.h"
#include "util.h"

#define R 7 /* the rank of the configs whose dv failed: few values to cancel over */

static tt_unit_result judged(const float *got, const float *want, long rows, long cols,
                             double row_tol, double floor)
{
    tt_unit_result r = {.whole.row = -1, .row.row = -1};
    tt_compare(&r, "dv", got, want, rows, cols, 1e-2, row_tol, floor);
    return r;
}

static double norm(const float *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s);
}

/* Three sequences' parts that nearly cancel, their sum want, and got: want off by 3e-3 of each
 * part's values, the size of the bf16 roundings of the parts' terms. */
static double cancelled(float *want, float *got)
{
    static const float a[R] = {0.8f, -1.1f, 0.5f, 0.9f, -0.3f, 1.2f, -0.7f};
    static const float b[R] = {-0.3f, 0.6f, 0.4f, -1.0f, 0.9f, -0.2f, 0.1f};
    double floor = 0;
    for (int i = 0; i < R; i++) {
        const float c = -(a[i] + b[i]) + (i % 2 ? 2e-3f : -1.5e-3f); /* the third, cancelling */
        want[i] = a[i] + b[i] + c;
        got[i] = want[i] + 3e-3f * (fabsf(a[i]) + fabsf(b[i]) + fabsf(c)) * (i % 3 ? 1 : -1);
        floor += (double)a[i] * a[i] + (double)b[i] * b[i] + (double)c * c;
    }
    return sqrt(floor);
}

/* A sum that cancelled fails against its own norm with a correct kernel's error, and passes
 * against the floor, judged by the same 1e-2. */
static void test_cancelled_sum(void **state)
{
    (void)state;
    float want[R], got[R];
    const double floor = cancelled(want, got);
    assert_true(norm(want, R) < 1e-2 * floor); /* the case the floor is for */
    const tt_unit_result own = judged(got, want, 1, R, 0, 0), floored = judged(got, want, 1, R, 0, floor);
    assert_true(own.ratio > 1);
    assert_true(floored.ratio <= 1);
    double diff[R], d = 0;
    for (int i = 0; i < R; i++) diff[i] = (double)got[i] - want[i], d += diff[i] * diff[i];
    assert_true(fabs(floored.whole.err - sqrt(d) / floor) < 1e-6 * floored.whole.err);
    assert_true(fabs(own.whole.err - sqrt(d) / norm(want, R)) < 1e-6 * own.whole.err);
}

/* An output left zero or not written fails against the floor too: the floor is the parts' size,
 * which an uncancelled reference has. */
static void test_floor_still_fails(void **state)
{
    (void)state;
    float want[R], got[R], zero[R] = {0};
    const double floor = cancelled(want, got);
    for (int i = 0; i < R; i++) want[i] = got[i] = (float)floor / sqrtf(R) * (i % 2 ? 1 : -1);
    assert_true(judged(zero, want, 1, R, 0, floor).ratio > 1); /* error 1 */
    got[3] = NAN;
    const tt_unit_result r = judged(got, want, 1, R, 0, floor);
    assert_true(isinf(r.ratio));
    assert_string_equal(r.note, "dv[3] is nan");
}

/* Floor 0, or a floor below the reference's norm, leaves every error as it was: the whole
 * tensor's that of tt_rel_l2, each row's its own (rows never see the floor), and an all-zero
 * reference the absolute error. */
static void test_floor_changes_nothing_else(void **state)
{
    (void)state;
    enum { ROWS = 3, COLS = 5, N = ROWS * COLS };
    float want[N], got[N], zero[N] = {0};
    for (int i = 0; i < N; i++) {
        want[i] = sinf(1.7f * (float)i + 0.3f);
        got[i] = want[i] * (1 + 4e-3f * cosf((float)i));
    }
    const double old = tt_rel_l2(got, want, N);
    const tt_unit_result none = judged(got, want, ROWS, COLS, 4e-2, 0);
    const tt_unit_result below = judged(got, want, ROWS, COLS, 4e-2, 0.5 * norm(want, N));
    const tt_unit_result above = judged(got, want, ROWS, COLS, 4e-2, 10 * norm(want, N));
    assert_true(none.whole.err == old && below.whole.err == old);
    assert_true(fabs(above.whole.err - old / 10) < 1e-9 * old);
    assert_true(none.row.err == below.row.err && none.row.err == above.row.err);
    assert_int_equal(none.row.row, above.row.row);
    assert_true(judged(got, zero, 1, N, 0, 0).whole.err == norm(got, N));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cancelled_sum),
        cmocka_unit_test(test_floor_still_fails),
        cmocka_unit_test(test_floor_changes_nothing_else),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
