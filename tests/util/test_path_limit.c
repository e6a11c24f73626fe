/* test_path_limit.c — the one path maximum (util/fsutil.h): al_path_fmt fills a
 * buffer exactly or fails naming the path, never cutting it short (a truncated
 * --out once sent a run elsewhere); al_path_check measures a path a user gives,
 * leaving room for what the program joins onto it; al_msgf cuts messages only. */
#include "check.h"
#include "attnlab/util/fsutil.h"

#include <stdlib.h>
#include <string.h>

/* A path of n characters: "/" then 'a's. */
static char *path_of(size_t n) {
    char *p = malloc(n + 1);
    memset(p, 'a', n);
    if (n) p[0] = '/';
    p[n] = '\0';
    return p;
}

static void test_fmt(void) {
    char buf[AL_PATH_MAX];
    AlError err = {0};
    char *exact = path_of(AL_PATH_MAX - 1), *over = path_of(AL_PATH_MAX);
    CHECK(al_path_fmt(buf, sizeof buf, &err, "%s", exact) == 0 && !strcmp(buf, exact), "a path of exactly "
          "AL_PATH_MAX - 1 characters must fit: %s", err.msg);
    CHECK(al_path_fmt(buf, sizeof buf, &err, "%s", over) == 2 && err.code == 2, "one character over must fail");
    CHECK(strstr(err.msg, "path too long (4096 > 4095 characters): '/aaa") && strstr(err.msg, "…'") && buf[0] == 0,
          "the message names the length and the path's start, the buffer is emptied: %s", err.msg);
    CHECK(strlen(err.msg) < 200, "the message quotes only the path's start (%zu bytes)", strlen(err.msg));
    memset(&err, 0, sizeof err);
    CHECK(al_path_fmt(buf, sizeof buf, &err, "%s/%s", "dir", "") == 0 && !strcmp(buf, "dir/") && !err.code,
          "a short join: %s", buf);
    CHECK(al_path_fmt(buf, sizeof buf, &err, "%s", "") == 0 && buf[0] == 0, "an empty path fits");
    char small[8];
    CHECK(al_path_fmt(small, sizeof small, &err, "%s/%s", "abc", "def") == 0 && !strcmp(small, "abc/def"),
          "a join of exactly 7 characters fits 8 bytes");
    CHECK(al_path_fmt(small, sizeof small, &err, "%s/%s", "abc", "defg") == 2 && small[0] == 0 &&
          strstr(err.msg, "path too long (8 > 7 characters): 'abc/def…'"), "one over a small buffer: %s", err.msg);
    CHECK(al_path_fmt(small, sizeof small, NULL, "%s/%s", "abc", "defg") == 2, "NULL err still fails");
    free(exact);
    free(over);
}

static void test_check(void) {
    AlError err = {0};
    char *exact = path_of(AL_PATH_MAX - 1 - AL_FOLDER_ROOM), *over = path_of(AL_PATH_MAX - AL_FOLDER_ROOM);
    CHECK(al_path_check(exact, AL_FOLDER_ROOM, "--out", &err) == 0, "a folder leaving exactly the room fits");
    CHECK(al_path_check(over, AL_FOLDER_ROOM, "--out", &err) == 2 &&
          strstr(err.msg, "--out: path too long (4032 > 4031 characters): '/aa"), "one over: %s", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(al_path_check("", 0, "the config file", &err) == 0 && !err.code, "an empty path is not too long");
    CHECK(al_path_check(over, 0, "the config file", &err) == 0, "a file needs no room");
    free(exact);
    free(over);
}

static void test_msgf(void) {
    char m[8];
    CHECK(!strcmp(al_msgf(m, sizeof m, "%s", "a long message"), "a long "), "a message is cut on purpose: %s", m);
}

int main(void) {
    test_fmt();
    test_check();
    test_msgf();
    return check_exit("path_limit");
}
