/* version.h — which build of attnlab is running, for `./train --version` and for
 * the "provenance" every output file carries.
 *
 * The version is CMake's project(VERSION …) (README: Version and provenance says
 * when it is bumped); the commit is the git commit the binary was built from, found
 * again on every build (scripts/version.cmake), with "-dirty" when tracked files had
 * uncommitted changes then, or "unknown" when the sources were not a git checkout.
 *
 * The provenance object, the same in every file that has one:
 *   {"attnlab_version": "0.4.0", "commit": "318bc36…", "build_type": "Release",
 *    "compiler": "GNU 12.2.0"}
 * It records who wrote a file, never what the file means: readers ignore it (a
 * run folder's config.json loads with it, and --resume never compares it). */
#ifndef ATTNLAB_UTIL_VERSION_H
#define ATTNLAB_UTIL_VERSION_H

#include <cJSON.h>

const char *attnlab_version(void);      /* "0.4.0" */
const char *attnlab_commit(void);       /* 40 hex digits [+ "-dirty"], or "unknown" */
const char *attnlab_build_type(void);   /* CMAKE_BUILD_TYPE: "Release", "Debug", … */
const char *attnlab_compiler(void);     /* "GNU 12.2.0" */

/* Metadata keys for a file format of string pairs (safetensors __metadata__). */
#define ATTNLAB_META_VERSION "attnlab_version"
#define ATTNLAB_META_COMMIT  "attnlab_commit"

/* A new provenance object (the caller owns it). */
cJSON *attnlab_provenance(void);
/* Adds (or replaces) obj's "provenance" member; obj must be a JSON object. */
void attnlab_add_provenance(cJSON *obj);
/* json: the text of one JSON object, e.g. cfg_to_json()'s.  Returns a malloc'ed
 * copy with "provenance" appended as its last member, the rest byte for byte as
 * it was (cfg_to_json's exact number formatting is kept); NULL if json is not an
 * object's text. */
char *attnlab_json_with_provenance(const char *json);

#endif
