/* tt_env_long, the reader of the runtime's integer knobs (TT_GEMM_TUNE, TT_CUDA_GRAPHS): unset
 * and empty give the fallback, an integer in range itself, and anything else the fallback with
 * one line on stderr naming the variable, its value and the range. tt_env_choice, the reader of
 * its named ones (TT_NCCL_SUMS), the same with the choices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

static long read_long(void) { return tt_env_long("TT_TEST_KNOB", 0, 32, 8); }
static long read_choice(void)
{
    static const char *const choices[] = {"fp32", "bf16", "tf32", NULL};
    return tt_env_choice("TT_TEST_KNOB", choices, 0);
}

/* read() (read_long unless given) with TT_TEST_KNOB set to value (NULL: unset); what it wrote to
 * stderr in said (empty when nothing). */
static long read_by(long (*read)(void), const char *value, char *said, size_t n)
{
    if (value) setenv("TT_TEST_KNOB", value, 1);
    else unsetenv("TT_TEST_KNOB");
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    const int saved = dup(fileno(stderr));
    dup2(fileno(tmp), fileno(stderr));
    const long v = read();
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    rewind(tmp);
    const size_t got = fread(said, 1, n - 1, tmp);
    said[got] = '\0';
    fclose(tmp);
    unsetenv("TT_TEST_KNOB");
    return v;
}
static long read_with(const char *value, char *said, size_t n)
{
    return read_by(read_long, value, said, n);
}

static void test_values(void **state)
{
    (void)state;
    char said[256];
    assert_int_equal(read_with(NULL, said, sizeof said), 8);
    assert_string_equal(said, "");
    assert_int_equal(read_with("", said, sizeof said), 8);
    assert_string_equal(said, "");
    assert_int_equal(read_with("0", said, sizeof said), 0);
    assert_int_equal(read_with("32", said, sizeof said), 32);
    assert_int_equal(read_with("16", said, sizeof said), 16);
    assert_string_equal(said, "");
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {"abc", "33", "-1", "4x", " ", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char said[256], want[256];
        assert_int_equal(read_with(bad[i], said, sizeof said), 8);
        snprintf(want, sizeof want, "TT_TEST_KNOB=%s: not an integer from 0 to 32; using 8\n", bad[i]);
        assert_string_equal(said, want);
    }
}

static void test_choices(void **state)
{
    (void)state;
    char said[256];
    assert_int_equal(read_by(read_choice, NULL, said, sizeof said), 0);
    assert_string_equal(said, "");
    assert_int_equal(read_by(read_choice, "", said, sizeof said), 0);
    assert_string_equal(said, "");
    assert_int_equal(read_by(read_choice, "bf16", said, sizeof said), 1);
    assert_int_equal(read_by(read_choice, "tf32", said, sizeof said), 2);
    assert_int_equal(read_by(read_choice, "fp32", said, sizeof said), 0);
    assert_string_equal(said, "");
    static const char *const bad[] = {"BF16", "bf16 ", "fp", "fp320", "1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char want[256];
        assert_int_equal(read_by(read_choice, bad[i], said, sizeof said), 0);
        snprintf(want, sizeof want, "TT_TEST_KNOB=%s: not one of fp32, bf16, tf32; using fp32\n", bad[i]);
        assert_string_equal(said, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_values), cmocka_unit_test(test_refused),
                                       cmocka_unit_test(test_choices)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
