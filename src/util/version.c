/* version.c — see version.h.  attnlab_build_info.h is generated in the build folder
 * by scripts/version.cmake (the CMake target attnlab_version). */
#include "attnlab/util/version.h"
#include "attnlab/util/error.h"
#include "attnlab_build_info.h"

#include <stdio.h>
#include <string.h>

const char *attnlab_version(void) { return ATTNLAB_VERSION_TEXT; }
const char *attnlab_commit(void) { return ATTNLAB_COMMIT_TEXT; }
const char *attnlab_build_type(void) { return *ATTNLAB_BUILD_TYPE_TEXT ? ATTNLAB_BUILD_TYPE_TEXT : "unknown"; }
const char *attnlab_compiler(void) { return ATTNLAB_COMPILER_TEXT; }

cJSON *attnlab_provenance(void) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "attnlab_version", attnlab_version());
    cJSON_AddStringToObject(p, "commit", attnlab_commit());
    cJSON_AddStringToObject(p, "build_type", attnlab_build_type());
    cJSON_AddStringToObject(p, "compiler", attnlab_compiler());
    return p;
}

void attnlab_add_provenance(cJSON *obj) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "provenance");
    cJSON_AddItemToObject(obj, "provenance", attnlab_provenance());
}

/* Text surgery rather than parse-and-print: cJSON would reformat the whole object
 * (and its numbers), while config.json keeps cfg_to_json's exact text. */
char *attnlab_json_with_provenance(const char *json) {
    const char *open = json + strspn(json, " \t\r\n"), *close = strrchr(json, '}');
    if (*open != '{' || !close || close < open) return NULL;
    const char *last = close;   /* the last non-blank character inside the braces */
    while (last > open && strchr(" \t\r\n", last[-1])) last--;
    int empty = last - 1 == open;
    cJSON *p = attnlab_provenance();
    char *member = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    size_t head = (size_t)(last - json), cap = strlen(json) + strlen(member) + 32;
    char *out = al_malloc(cap);
    snprintf(out, cap, "%.*s%s\n  \"provenance\": %s\n%s", (int)head, json, empty ? "" : ",", member, close);
    cJSON_free(member);
    return out;
}
