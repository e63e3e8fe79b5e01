/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Where a secret comes from (beacon_secret_source) and exec: programs
 * (beacon_key_exec). The programs are /bin/sh -c '...': no file to write.
 */
#include "test_common.h"

#include <fcntl.h>
#include <signal.h>

#include <apr_strings.h>

#define HEX_SECRET "hex:00112233445566778899aabbccddeeff"
#define SHORT_LIMIT apr_time_from_msec(300)
#define NOT_A_SOURCE "only file:/path and exec:/path"
/* env: is no source: httpd's ${NAME} (beaconctl: BEACON_SECRET) is */
#define NOT_ENV "use httpd's own ${NAME}"

typedef struct {
    const char *name;
    const char *value;
    const char *refusal; /* what the refusal says; NULL: accepted */
    beacon_secret_source_t source;
    const char *rest;
} source_row_t;

static const source_row_t source_rows[] = {
    {"a hex secret", HEX_SECRET, NULL, BEACON_SECRET_INLINE, HEX_SECRET},
    {"a passphrase", "a-long-random-shared-secret", NULL, BEACON_SECRET_INLINE,
     "a-long-random-shared-secret"},
    {"a passphrase with a colon but no slash", "word:not-a-source-at-all", NULL,
     BEACON_SECRET_INLINE, "word:not-a-source-at-all"},
    {"file:", "file:/etc/beacon.secret", NULL, BEACON_SECRET_FILE,
     "/etc/beacon.secret"},
    {"File: in another case", "File:/etc/beacon.secret", NULL, BEACON_SECRET_FILE,
     "/etc/beacon.secret"},
    {"exec:", "exec:/usr/bin/get 1", NULL, BEACON_SECRET_EXEC, "/usr/bin/get 1"},
    {"EXEC: in capitals", "EXEC:/usr/bin/get", NULL, BEACON_SECRET_EXEC,
     "/usr/bin/get"},
    {"env:/ is no source beacon knows", "env:/BEACON_SECRET", NOT_ENV, 0, NULL},
    {"env: without a slash neither", "env:BEACON_SECRET", NOT_ENV, 0, NULL},
    {"ENV: in capitals", "ENV:BEACON_SECRET", NOT_ENV, 0, NULL},
    {"Env: alone", "Env:", NOT_ENV, 0, NULL},
    {"pass:/ neither", "pass:/beacon/cluster", NOT_A_SOURCE, 0, NULL},
    {"a typo of file:", "fiel:/etc/beacon.secret", NOT_A_SOURCE, 0, NULL},
    {"a url", "https://vault.example/v1/secret", NOT_A_SOURCE, 0, NULL},
    {"a passphrase that only ends in env:", "my-long-passphrase-env:x", NULL,
     BEACON_SECRET_INLINE, "my-long-passphrase-env:x"},
};

static void each_value_has_its_source(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(source_rows); i++) {
        const source_row_t *row = &source_rows[i];
        beacon_secret_source_t source = (beacon_secret_source_t)-1;
        const char *rest = NULL;
        const char *err = beacon_secret_source(row->value, &source, &rest);

        if (row->refusal) {
            if (err == NULL || strstr(err, row->refusal) == NULL) {
                fail_msg("%s: '%s' not refused with \"%s\": %s", row->name,
                         row->value, row->refusal, err ? err : "accepted");
            }
            continue;
        }
        if (err != NULL || source != row->source || strcmp(rest, row->rest)) {
            fail_msg("%s: '%s' gave %s", row->name, row->value,
                     err ? err : rest);
        }
    }
}

/* The key that beacon_key_parse gives the same text. */
static beacon_key_t key_of(const char *secret)
{
    beacon_key_t key;

    assert_null(beacon_key_parse(secret, &key));
    return key;
}

static const char *run(const char *command, apr_interval_time_t limit,
                       beacon_key_t *key)
{
    return beacon_key_exec(TEST_POOL, command, limit, key);
}

static void exec_takes_the_first_line_the_program_prints(void **state)
{
    beacon_key_t key, want = key_of(HEX_SECRET);

    (void)state;
    /* (the line rule itself, CRLF and all, is the secret-file rule) */
    assert_null(run("/bin/sh -c 'echo " HEX_SECRET "; echo more'",
                    BEACON_SECRET_EXEC_LIMIT, &key));
    assert_memory_equal(key.bytes, want.bytes, BEACON_KEY_LEN);
}

static void exec_passes_the_arguments(void **state)
{
    beacon_key_t key, want = key_of("a-long-random-shared-secret");

    (void)state;
    assert_null(run("/bin/sh -c 'echo \"$1\"' sh a-long-random-shared-secret",
                    BEACON_SECRET_EXEC_LIMIT, &key));
    assert_memory_equal(key.bytes, want.bytes, BEACON_KEY_LEN);
}

/* The message says what failed, never what the program printed. */
static void assert_refused(const char *command, apr_interval_time_t limit,
                           const char *says)
{
    beacon_key_t key;
    const char *err = run(command, limit, &key);

    assert_non_null(err);
    if (strstr(err, says) == NULL) {
        fail_msg("'%s': '%s' does not say '%s'", command, err, says);
    }
    assert_null(strstr(err, "leaky"));
}

static void a_failing_program_is_an_error(void **state)
{
    (void)state;
    assert_refused("/bin/sh -c 'echo leaky-secret-0123456789; exit 3'",
                   BEACON_SECRET_EXEC_LIMIT, "exited with status 3");
    assert_refused("/bin/sh -c 'kill -9 $$'", BEACON_SECRET_EXEC_LIMIT,
                   "killed by signal 9");
    assert_refused("/nonexistent/get-secret", BEACON_SECRET_EXEC_LIMIT,
                   "/nonexistent/get-secret");
}

static void empty_or_unusable_output_is_an_error(void **state)
{
    (void)state;
    assert_refused("/bin/true", BEACON_SECRET_EXEC_LIMIT, "printed no secret");
    assert_refused("/bin/sh -c 'echo; echo leaky-secret-0123456789'",
                   BEACON_SECRET_EXEC_LIMIT, "printed no secret");
    assert_refused("/bin/echo leaky", BEACON_SECRET_EXEC_LIMIT,
                   "at least 16 bytes");
}

static void a_program_past_the_limit_is_killed(void **state)
{
    apr_time_t started = apr_time_now();

    (void)state;
    assert_refused("/bin/sleep 30", SHORT_LIMIT, "did not finish within 0.3 s");
    assert_true(apr_time_now() - started < apr_time_from_sec(5));
    /* printed the secret, then hung: still refused */
    assert_refused("/bin/sh -c 'echo " HEX_SECRET "; exec sleep 30'",
                   SHORT_LIMIT, "did not finish");
}

/* Whether pid has exited (gone, or a zombie no one reaped yet). */
static int process_gone(long pid)
{
    char path[64], stat[512];
    const char *after_name;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL) {
        return 1;
    }
    n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    after_name = strrchr(stat, ')'); /* "pid (comm) state ..." */
    return after_name == NULL || after_name[2] == 'Z';
}

/* Polls, for at most 5 s, until the pid the program wrote to path exits. */
static void assert_background_child_dies(const char *path)
{
    apr_time_t until = apr_time_now() + apr_time_from_sec(5);
    long pid = 0;
    FILE *f = fopen(path, "r");

    assert_non_null(f);
    assert_int_equal(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    remove(path);
    assert_true(pid > 1);
    while (!process_gone(pid) && apr_time_now() < until) {
        apr_sleep(apr_time_from_msec(10));
    }
    if (!process_gone(pid)) {
        kill((pid_t)pid, SIGKILL); /* ours: the test started it */
        fail_msg("the program's background child %ld outlived it", pid);
    }
}

/* A program's background children die with it: one that holds the
 * output open past the limit, and one left behind by a program that
 * succeeded, which would hold the caller's stderr (apache2 -t's). */
static void the_programs_background_children_die_with_it(void **state)
{
    char pidfile[] = "/tmp/beacon-test-exec-XXXXXX";
    apr_time_t started = apr_time_now();
    beacon_key_t key, want = key_of(HEX_SECRET);
    int fd = mkstemp(pidfile);

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    assert_refused(apr_psprintf(TEST_POOL, "/bin/sh -c 'sleep 60 & echo $! > "
                                "%s; wait'", pidfile),
                   SHORT_LIMIT, "did not finish within 0.3 s");
    assert_true(apr_time_now() - started < apr_time_from_sec(5));
    assert_background_child_dies(pidfile);

    assert_null(run(apr_psprintf(TEST_POOL, "/bin/sh -c 'sleep 60 >/dev/null & "
                                 "echo $! > %s; echo " HEX_SECRET "'", pidfile),
                    BEACON_SECRET_EXEC_LIMIT, &key));
    assert_memory_equal(key.bytes, want.bytes, BEACON_KEY_LEN);
    assert_background_child_dies(pidfile);
}

/* The program gets fds 0 to 2 only (1 is the pipe): not an fd the caller
 * left open without close-on-exec (httpd's, beaconctl's). */
static void only_fds_0_to_2_reach_the_program(void **state)
{
    beacon_key_t key;
    int fd = open("/dev/null", O_RDONLY);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(dup2(fd, 57), 57); /* dup2 clears close-on-exec */
    close(fd);
    assert_null(run("/bin/sh -c '[ -e /proc/self/fd/57 ] && exit 57; "
                    "echo " HEX_SECRET "'", BEACON_SECRET_EXEC_LIMIT, &key));
    close(57);
}

static void exec_needs_an_absolute_path(void **state)
{
    (void)state;
    assert_refused("", BEACON_SECRET_EXEC_LIMIT, "absolute path");
    assert_refused("sh -c 'echo x'", BEACON_SECRET_EXEC_LIMIT, "absolute path");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_value_has_its_source),
        cmocka_unit_test(exec_takes_the_first_line_the_program_prints),
        cmocka_unit_test(exec_passes_the_arguments),
        cmocka_unit_test(a_failing_program_is_an_error),
        cmocka_unit_test(empty_or_unusable_output_is_an_error),
        cmocka_unit_test(a_program_past_the_limit_is_killed),
        cmocka_unit_test(exec_needs_an_absolute_path),
        cmocka_unit_test(the_programs_background_children_die_with_it),
        cmocka_unit_test(only_fds_0_to_2_reach_the_program),
    };

    return cmocka_run_group_tests_name("secret", tests, test_pool_setup,
                                       test_pool_teardown);
}
