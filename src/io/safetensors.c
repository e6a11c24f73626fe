/* safetensors.c — see safetensors.h.
 *
 * The loader trusts nothing in the file: every number of the header is checked as
 * an integer in [0, 2^53] and every byte range in uint64 arithmetic against the data
 * buffer before it is used, so a hostile file (this code is fuzzed) yields a message,
 * never an out-of-bounds read.  Names in messages are cut at 200 bytes so a huge
 * name cannot crowd out the rest of the message.
 *
 * The checks above cannot see a flipped bit in the data buffer, so st_write stores
 * a CRC-32C of every tensor's bytes in "__metadata__" and st_read verifies it before
 * copying anything out (see safetensors.h for the scheme). */
#include "attnlab/io/safetensors.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/io/crc32c.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Tensor bytes are copied raw between memory and file, and the format is LE. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "attnlab's safetensors code copies data raw and needs a little-endian host"
#endif

#define JSON_MAX_INT 9007199254740992.0   /* 2^53: above it a JSON double loses integers */

/* ---- dtypes ------------------------------------------------------------------ */

static const struct { const char *name; int size; } dtypes[ST_N_DTYPES] = {
    [ST_F32] = {"F32", 4},  [ST_F64] = {"F64", 8},  [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
    [ST_I64] = {"I64", 8},  [ST_I32] = {"I32", 4},  [ST_I16] = {"I16", 2},
    [ST_I8] = {"I8", 1},    [ST_U64] = {"U64", 8},  [ST_U32] = {"U32", 4},
    [ST_U16] = {"U16", 2},  [ST_U8] = {"U8", 1},    [ST_BOOL] = {"BOOL", 1},
};

const char *st_dtype_name(StDtype d) {
    AL_ASSERT((unsigned)d < ST_N_DTYPES);
    return dtypes[d].name;
}

int st_dtype_size(StDtype d) {
    AL_ASSERT((unsigned)d < ST_N_DTYPES);
    return dtypes[d].size;
}

static int dtype_from_name(const char *s, StDtype *out) {
    for (int d = 0; d < ST_N_DTYPES; d++) {
        if (strcmp(s, dtypes[d].name) == 0) { *out = (StDtype)d; return 0; }
    }
    return -1;
}

/* ---- small helpers ------------------------------------------------------------ */

static void host_check(void) {
    const uint16_t one = 1;
    unsigned char low;
    memcpy(&low, &one, 1);
    AL_ASSERT(low == 1);   /* for compilers without __BYTE_ORDER__ */
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(al_malloc(n), s, n);
}

/* Bytes of a tensor of this shape, or UINT64_MAX if that does not fit in 64 bits
 * (no file can hold such a tensor, so the sentinel never collides with a real size). */
static uint64_t shape_bytes(int ndim, const int64_t *shape, int elem_size) {
    uint64_t n = (uint64_t)elem_size;
    for (int i = 0; i < ndim; i++) if (shape[i] == 0) return 0;
    for (int i = 0; i < ndim; i++) {
        if (n > UINT64_MAX / (uint64_t)shape[i]) return UINT64_MAX;
        n *= (uint64_t)shape[i];
    }
    return n;
}

/* "(64,64)", "()" for a scalar; cut with "...)" if it does not fit in buf. */
static const char *fmt_shape(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, cap, "(");
    int i = 0;
    for (; i < ndim && used + 30 < cap; i++)   /* room for a number, a comma and "...)" */
        used += (size_t)snprintf(buf + used, cap - used, i ? ",%" PRId64 : "%" PRId64, shape[i]);
    snprintf(buf + used, cap - used, i < ndim ? ",...)" : ")");
    return buf;
}

/* Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF), as the
 * spec requires of the header.  Returns 1, or 0 with *bad = offset of the bad byte. */
static int utf8_valid(const unsigned char *s, size_t n, size_t *bad) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) { i++; continue; }
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
        else break;
        if (n - i < len) break;
        size_t k = 1;
        for (; k < len && (s[i + k] & 0xC0) == 0x80; k++) cp = cp << 6 | (s[i + k] & 0x3F);
        if (k < len || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) break;
        i += len;
    }
    if (i < n) *bad = i;
    return i == n;
}

/* ---- writing ------------------------------------------------------------------ */

static int check_tensor(const StTensor *t, int i, uint64_t *bytes, AlError *err) {
    size_t bad;
    if (!t->name) return al_fail(err, 1, "tensor %d has no name", i);
    if (!utf8_valid((const unsigned char *)t->name, strlen(t->name), &bad))
        return al_fail(err, 1, "tensor name '%.200s' is not valid UTF-8", t->name);
    if (strcmp(t->name, "__metadata__") == 0)
        return al_fail(err, 1, "'__metadata__' is reserved and cannot name a tensor");
    if (t->ndim < 0 || t->ndim > ST_MAX_DIM)
        return al_fail(err, 1, "tensor '%.200s' has %d dimensions (0 to %d supported)",
                       t->name, t->ndim, ST_MAX_DIM);
    if ((unsigned)t->dtype >= ST_N_DTYPES)
        return al_fail(err, 1, "tensor '%.200s' has an invalid dtype (%d)", t->name, (int)t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return al_fail(err, 1, "tensor '%.200s' has negative dimension %" PRId64,
                           t->name, t->shape[d]);
    }
    *bytes = shape_bytes(t->ndim, t->shape, dtypes[t->dtype].size);
    if (*bytes == UINT64_MAX || *bytes > SIZE_MAX)
        return al_fail(err, 1, "tensor '%.200s' is too large", t->name);
    if (*bytes && !t->data) return al_fail(err, 1, "tensor '%.200s' has no data", t->name);
    return 0;
}

/* Validates everything the reader would reject, so st_write never makes a bad file.
 * Duplicates are found pairwise: writers have tens to hundreds of names. */
static int check_inputs(const StTensor *t, int n, const StMeta *meta, int n_meta,
                        uint64_t *bytes, AlError *err) {
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        int rc = check_tensor(&t[i], i, &bytes[i], err);
        if (rc) return rc;
        for (int j = 0; j < i; j++) {
            if (strcmp(t[i].name, t[j].name) == 0)
                return al_fail(err, 1, "tensor name '%.200s' is used twice", t[i].name);
        }
        if (bytes[i] > UINT64_MAX - total) return al_fail(err, 1, "tensors are too large");
        total += bytes[i];
    }
    for (int i = 0; i < n_meta; i++) {
        size_t bad;
        if (!meta[i].key || !meta[i].value)
            return al_fail(err, 1, "metadata entry %d has a NULL key or value", i);
        if (!utf8_valid((const unsigned char *)meta[i].key, strlen(meta[i].key), &bad) ||
            !utf8_valid((const unsigned char *)meta[i].value, strlen(meta[i].value), &bad))
            return al_fail(err, 1, "metadata '%.200s' is not valid UTF-8", meta[i].key);
        if (strncmp(meta[i].key, ST_CRC_PREFIX, strlen(ST_CRC_PREFIX)) == 0)
            return al_fail(err, 1, "metadata key '%.200s' is reserved (st_write stores each tensor's "
                           "checksum under " ST_CRC_PREFIX "NAME)", meta[i].key);
        for (int j = 0; j < i; j++) {
            if (strcmp(meta[i].key, meta[j].key) == 0)
                return al_fail(err, 1, "metadata key '%.200s' is used twice", meta[i].key);
        }
    }
    return 0;
}

/* cJSON's builders return NULL only when out of memory; that is fatal, as in al_malloc. */
static void *json_ok(void *p) {
    if (!p) {
        fprintf(stderr, "attnlab: out of memory building a safetensors header\n");
        exit(1);
    }
    return p;
}

/* Integer arrays go in as raw JSON text printed here: cJSON keeps numbers as doubles
 * and prints 1e15 and up in exponent form ("1e+15"), which Python's json reads back
 * as a float.  Printing the int64 ourselves keeps every dimension and offset exact. */
static void add_int_array(cJSON *obj, const char *key, const int64_t *v, int n) {
    char buf[2 + 2 * 21 + ST_MAX_DIM * 21];
    size_t used = (size_t)snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, i ? ",%" PRId64 : "%" PRId64, v[i]);
    snprintf(buf + used, sizeof buf - used, "]");
    json_ok(cJSON_AddRawToObject(obj, key, buf));
}

/* "crc32c.NAME": "1a2b3c4d" for each tensor, after the caller's metadata. */
static void add_checksums(cJSON *m, const StTensor *t, int n, const uint32_t *crc) {
    for (int i = 0; i < n; i++) {
        size_t len = strlen(ST_CRC_PREFIX) + strlen(t[i].name) + 1;
        char *key = al_malloc(len), value[9];
        snprintf(key, len, ST_CRC_PREFIX "%s", t[i].name);
        snprintf(value, sizeof value, "%08" PRIx32, crc[i]);
        json_ok(cJSON_AddStringToObject(m, key, value));
        free(key);
    }
}

/* The header JSON, padded with spaces to a multiple of 8 bytes; *len = its length. */
static char *build_header(const StTensor *t, int n, const StMeta *meta, int n_meta,
                          const uint64_t *bytes, const uint32_t *crc, size_t *len) {
    cJSON *root = json_ok(cJSON_CreateObject());
    if (n_meta > 0 || n > 0) {
        cJSON *m = json_ok(cJSON_AddObjectToObject(root, "__metadata__"));
        for (int i = 0; i < n_meta; i++)
            json_ok(cJSON_AddStringToObject(m, meta[i].key, meta[i].value));
        add_checksums(m, t, n, crc);
    }
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        cJSON *o = json_ok(cJSON_AddObjectToObject(root, t[i].name));
        json_ok(cJSON_AddStringToObject(o, "dtype", dtypes[t[i].dtype].name));
        add_int_array(o, "shape", t[i].shape, t[i].ndim);
        int64_t offsets[2] = {(int64_t)offset, (int64_t)(offset + bytes[i])};
        add_int_array(o, "data_offsets", offsets, 2);
        offset += bytes[i];
    }
    char *json = json_ok(cJSON_PrintUnformatted(root));
    cJSON_Delete(root);
    size_t raw = strlen(json);
    *len = (raw + 7) & ~(size_t)7;
    char *header = al_malloc(*len);
    memcpy(header, json, raw);
    memset(header + raw, ' ', *len - raw);
    cJSON_free(json);
    return header;
}

int st_write(const char *path, const StTensor *t, int n, const StMeta *meta, int n_meta,
             AlError *err) {
    host_check();
    AL_ASSERT(path && n >= 0 && n_meta >= 0 && (n == 0 || t) && (n_meta == 0 || meta));
    uint64_t *bytes = al_calloc((size_t)n + 1, sizeof *bytes);
    int rc = check_inputs(t, n, meta, n_meta, bytes, err);
    if (rc) {
        free(bytes);
        al_error_prefix(err, "cannot write '%s'", path);
        return rc;
    }
    uint32_t *crc = al_malloc(((size_t)n + 1) * sizeof *crc);
    for (int i = 0; i < n; i++) crc[i] = crc32c(0, t[i].data, (size_t)bytes[i]);
    size_t header_len;
    char *header = build_header(t, n, meta, n_meta, bytes, crc, &header_len);
    free(crc);
    unsigned char len_le[8];
    for (int i = 0; i < 8; i++) len_le[i] = (unsigned char)((uint64_t)header_len >> (8 * i));

    const void **chunks = al_malloc(((size_t)n + 2) * sizeof *chunks);
    size_t *sizes = al_malloc(((size_t)n + 2) * sizeof *sizes);
    chunks[0] = len_le, sizes[0] = 8;
    chunks[1] = header, sizes[1] = header_len;
    for (int i = 0; i < n; i++) chunks[2 + i] = t[i].data, sizes[2 + i] = (size_t)bytes[i];
    rc = atomic_write(path, chunks, sizes, n + 2, err);
    free(chunks);
    free(sizes);
    free(header);
    free(bytes);
    return rc;
}

/* ---- reading: the loaded file ------------------------------------------------- */

typedef struct StEntry {
    StInfo info;                 /* name and shape are owned */
    uint64_t begin, end;         /* validated: begin <= end <= data_len */
    int has_crc;                 /* the header gives a CRC-32C of the bytes ... */
    uint32_t crc;                /* ... this one */
} StEntry;

typedef struct StPair { char *key, *value; } StPair;

struct StFile {
    char *path;
    unsigned char *bytes;        /* the whole file */
    const unsigned char *data;   /* the data buffer, inside bytes */
    uint64_t data_len;
    int n;
    StEntry *e;                  /* header order */
    StEntry **by_name;           /* sorted by name: lookups and the duplicate check */
    int n_meta;
    StPair *meta;                /* sorted by key */
    int n_crc;                   /* "crc32c.*" keys, whether or not they name a tensor */
};

void st_close(StFile *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) {
        free((char *)f->e[i].info.name);
        free((int64_t *)f->e[i].info.shape);
    }
    for (int i = 0; i < f->n_meta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->e);
    free(f->by_name);
    free(f->meta);
    free(f->bytes);
    free(f->path);
    free(f);
}

/* Reads the whole file; works for pipes and /proc files too (no trust in st_size). */
static unsigned char *read_all(const char *path, size_t *size, AlError *err) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        al_fail(err, 1, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    size_t cap = 1 << 16, len = 0;
    if (fstat(fd, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            close(fd);
            al_fail(err, 1, "cannot read '%s': it is %s, not a regular file", path,
                    S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a named pipe (FIFO)" : "a device or socket");
            return NULL;
        }
        if (st.st_size > 0) cap = (size_t)st.st_size + 1;
    }
    unsigned char *buf = al_malloc(cap);
    for (;;) {
        if (len == cap) buf = al_realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            al_fail(err, 1, "cannot read '%s': %s", path, strerror(errno));
            close(fd);
            free(buf);
            return NULL;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    *size = len;
    return buf;
}

/* ---- reading: header validation ----------------------------------------------- */

/* A JSON number that is an exact integer in [0, 2^53]; anything else is -1. */
static int json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= JSON_MAX_INT) || d != floor(d)) return -1;
    *out = (uint64_t)d;
    return 0;
}

/* "tensor 'x': shape[1] must be a non-negative integer (got -3)". */
static int bad_uint(AlError *err, const char *name, const char *what, int i, const cJSON *v) {
    if (cJSON_IsNumber(v))
        return al_fail(err, 1, "tensor '%.200s': %s[%d] must be a non-negative integer (got %.17g)",
                       name, what, i, v->valuedouble);
    const char *kind = cJSON_IsString(v) ? "a string" : cJSON_IsBool(v) ? "a boolean"
                     : cJSON_IsNull(v) ? "null" : cJSON_IsArray(v) ? "an array" : "an object";
    return al_fail(err, 1, "tensor '%.200s': %s[%d] must be a non-negative integer (got %s)",
                   name, what, i, kind);
}

static cJSON_bool is_pair(const cJSON *const v) { return cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2; }

/* Tensor `name`'s field `key` when present and of the form `ok` accepts (`what`
 * names it for the message); NULL with err otherwise. */
static const cJSON *need_field(const cJSON *o, const char *name, const char *key,
                               cJSON_bool (*ok)(const cJSON *const), const char *what, AlError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) al_fail(err, 1, "tensor '%.200s' has no \"%s\"", name, key);
    else if (!ok(v)) al_fail(err, 1, "tensor '%.200s': \"%s\" is not %s", name, key, what);
    return v && ok(v) ? v : NULL;
}

static int parse_dtype(StEntry *e, const cJSON *o, AlError *err) {
    const char *name = e->info.name;
    const cJSON *v = need_field(o, name, "dtype", cJSON_IsString, "a string", err);
    if (!v) return 1;
    if (dtype_from_name(v->valuestring, &e->info.dtype) != 0)
        return al_fail(err, 1, "tensor '%.200s' has unsupported dtype \"%.40s\" (known: F64 F32 "
                       "F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U64 U32 U16 U8 BOOL)",
                       name, v->valuestring);
    return 0;
}

static int parse_shape(StEntry *e, const cJSON *o, AlError *err) {
    const char *name = e->info.name;
    const cJSON *v = need_field(o, name, "shape", cJSON_IsArray, "an array", err);
    if (!v) return 1;
    int ndim = cJSON_GetArraySize(v), i = 0;
    int64_t *shape = al_malloc((size_t)ndim * sizeof *shape);
    e->info.shape = shape;
    const cJSON *d;
    cJSON_ArrayForEach(d, v) {
        uint64_t u;
        if (json_uint(d, &u) != 0) return bad_uint(err, name, "shape", i, d);
        shape[i++] = (int64_t)u;
    }
    e->info.ndim = ndim;
    return 0;
}

static int parse_offsets(StEntry *e, const cJSON *o, uint64_t data_len, AlError *err) {
    const char *name = e->info.name;
    const cJSON *v = need_field(o, name, "data_offsets", is_pair, "an array [begin, end]", err);
    if (!v) return 1;
    const cJSON *b = cJSON_GetArrayItem(v, 0), *x = cJSON_GetArrayItem(v, 1);
    if (json_uint(b, &e->begin) != 0) return bad_uint(err, name, "data_offsets", 0, b);
    if (json_uint(x, &e->end) != 0) return bad_uint(err, name, "data_offsets", 1, x);
    if (e->end < e->begin)
        return al_fail(err, 1, "tensor '%.200s': data_offsets [%" PRIu64 ", %" PRIu64 "] end "
                       "before they begin", name, e->begin, e->end);
    if (e->end > data_len)
        return al_fail(err, 1, "tensor '%.200s': data_offsets [%" PRIu64 ", %" PRIu64 "] reach "
                       "past the end of the data buffer (%" PRIu64 " bytes)",
                       name, e->begin, e->end, data_len);
    uint64_t need = shape_bytes(e->info.ndim, e->info.shape, dtypes[e->info.dtype].size);
    if (need != e->end - e->begin) {
        char s[128];
        fmt_shape(s, sizeof s, e->info.ndim, e->info.shape);
        if (need == UINT64_MAX)
            return al_fail(err, 1, "tensor '%.200s': shape %s is too large", name, s);
        return al_fail(err, 1, "tensor '%.200s': data_offsets [%" PRIu64 ", %" PRIu64 "] span "
                       "%" PRIu64 " bytes, but %s shape %s needs %" PRIu64, name, e->begin, e->end,
                       e->end - e->begin, dtypes[e->info.dtype].name, s, need);
    }
    return 0;
}

static int parse_entry(StEntry *e, const cJSON *item, uint64_t data_len, AlError *err) {
    e->info.name = dup_str(item->string);
    if (!cJSON_IsObject(item))
        return al_fail(err, 1, "tensor '%.200s': entry is not a JSON object", e->info.name);
    int rc = parse_dtype(e, item, err);
    if (!rc) rc = parse_shape(e, item, err);
    if (!rc) rc = parse_offsets(e, item, data_len, err);
    return rc;
}

static int cmp_pair(const void *a, const void *b) {
    return strcmp(((const StPair *)a)->key, ((const StPair *)b)->key);
}

/* "__metadata__": string → string only (null is taken as absent). */
static int parse_meta(StFile *f, const cJSON *m, AlError *err) {
    if (cJSON_IsNull(m)) return 0;
    if (!cJSON_IsObject(m)) return al_fail(err, 1, "\"__metadata__\" is not a JSON object");
    f->meta = al_calloc((size_t)cJSON_GetArraySize(m), sizeof *f->meta);
    const cJSON *v;
    cJSON_ArrayForEach(v, m) {
        if (!cJSON_IsString(v))
            return al_fail(err, 1, "metadata '%.200s' is not a string", v->string);
        f->meta[f->n_meta].key = dup_str(v->string);
        f->meta[f->n_meta++].value = dup_str(v->valuestring);
    }
    qsort(f->meta, (size_t)f->n_meta, sizeof *f->meta, cmp_pair);
    for (int i = 1; i < f->n_meta; i++) {
        if (strcmp(f->meta[i - 1].key, f->meta[i].key) == 0)
            return al_fail(err, 1, "metadata key '%.200s' appears twice", f->meta[i].key);
    }
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp((*(StEntry *const *)a)->info.name, (*(StEntry *const *)b)->info.name);
}

static int cmp_offset(const void *a, const void *b) {
    const StEntry *x = *(StEntry *const *)a, *y = *(StEntry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The spec requires the tensors to tile the data buffer exactly: no overlap (two
 * names aliasing one set of bytes) and no holes (bytes nothing accounts for). */
static int check_coverage(const StFile *f, AlError *err) {
    StEntry **s = al_malloc(((size_t)f->n + 1) * sizeof *s);
    for (int i = 0; i < f->n; i++) s[i] = &f->e[i];
    qsort(s, (size_t)f->n, sizeof *s, cmp_offset);
    uint64_t pos = 0;
    int rc = 0;
    for (int i = 0; i < f->n && !rc; i++) {
        if (s[i]->begin < pos)
            rc = al_fail(err, 1, "tensors '%.200s' [%" PRIu64 ", %" PRIu64 ") and '%.200s' "
                         "[%" PRIu64 ", %" PRIu64 ") overlap in the data buffer",
                         s[i - 1]->info.name, s[i - 1]->begin, s[i - 1]->end,
                         s[i]->info.name, s[i]->begin, s[i]->end);
        else if (s[i]->begin > pos)
            rc = al_fail(err, 1, "bytes [%" PRIu64 ", %" PRIu64 ") of the data buffer belong to no "
                         "tensor (a hole before '%.200s')", pos, s[i]->begin, s[i]->info.name);
        pos = s[i]->end;
    }
    if (!rc && pos != f->data_len)
        rc = al_fail(err, 1, "bytes [%" PRIu64 ", %" PRIu64 ") at the end of the data buffer "
                     "belong to no tensor", pos, f->data_len);
    free(s);
    return rc;
}

/* A checksum value: exactly 8 hex digits (st_write writes lowercase). */
static int parse_crc(const char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        unsigned char c = (unsigned char)s[i];   /* the NUL of a short value stops here */
        if (!isxdigit(c)) return -1;
        v = v << 4 | (uint32_t)(isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
    }
    if (s[8] != '\0') return -1;
    *out = v;
    return 0;
}

/* Attaches each "crc32c.NAME" value to tensor NAME.  A key naming no tensor only
 * counts (the file has checksums): whoever asks for NAME gets "no tensor 'NAME'",
 * and a tensor whose key was damaged into that one is then refused for having none. */
static int parse_checksums(StFile *f, AlError *err) {
    size_t prefix = strlen(ST_CRC_PREFIX);
    for (int i = 0; i < f->n_meta; i++) {
        const StPair *p = &f->meta[i];
        uint32_t crc;
        if (strncmp(p->key, ST_CRC_PREFIX, prefix) != 0) continue;
        if (parse_crc(p->value, &crc) != 0)
            return al_fail(err, 1, "metadata '%.200s' = '%.40s' is not a CRC-32C checksum (8 hex digits)",
                           p->key, p->value);
        f->n_crc++;
        int t = st_find(f, p->key + prefix);
        if (t < 0) continue;
        f->e[t].has_crc = 1;
        f->e[t].crc = crc;
    }
    return 0;
}

static int parse_tensors(StFile *f, const cJSON *root, AlError *err) {
    const cJSON *meta = NULL, *item;
    f->e = al_calloc((size_t)cJSON_GetArraySize(root), sizeof *f->e);
    cJSON_ArrayForEach(item, root) {
        int rc = 0;
        if (strcmp(item->string, "__metadata__") != 0)
            rc = parse_entry(&f->e[f->n++], item, f->data_len, err);
        else if (meta)
            rc = al_fail(err, 1, "\"__metadata__\" appears twice in the header");
        else
            meta = item;
        if (rc) return rc;
    }
    int rc = meta ? parse_meta(f, meta, err) : 0;
    if (rc) return rc;
    f->by_name = al_malloc(((size_t)f->n + 1) * sizeof *f->by_name);
    for (int i = 0; i < f->n; i++) f->by_name[i] = &f->e[i];
    qsort(f->by_name, (size_t)f->n, sizeof *f->by_name, cmp_name);
    for (int i = 1; i < f->n; i++) {
        if (strcmp(f->by_name[i - 1]->info.name, f->by_name[i]->info.name) == 0)
            return al_fail(err, 1, "tensor '%.200s' appears twice in the header",
                           f->by_name[i]->info.name);
    }
    rc = check_coverage(f, err);
    return rc ? rc : parse_checksums(f, err);
}

static int is_json_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Checks the raw header bytes and parses them; *root is the JSON object. */
static int parse_json(const unsigned char *h, size_t n, cJSON **root, AlError *err) {
    size_t bad;
    if (memchr(h, 0, n))
        return al_fail(err, 1, "header contains a NUL byte at byte %zu",
                       (size_t)((const unsigned char *)memchr(h, 0, n) - h));
    if (!utf8_valid(h, n, &bad))
        return al_fail(err, 1, "header is not valid UTF-8 (byte %zu)", bad);
    if (n == 0 || h[0] != '{')
        return al_fail(err, 1, "header is not a JSON object (it must start with '{')");
    /* A NUL-terminated copy: older cJSON versions can read past a buffer's length. */
    char *text = memcpy(al_malloc(n + 1), h, n);
    text[n] = '\0';
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts(text, n + 1, &end, 0);
    size_t at = end ? (size_t)(end - text) : 0;
    free(text);
    if (!*root) return al_fail(err, 1, "header is not valid JSON (error near byte %zu)", at);
    if (!cJSON_IsObject(*root)) return al_fail(err, 1, "header is not a JSON object");
    while (at < n && is_json_space(h[at])) at++;
    if (at < n)
        return al_fail(err, 1, "header has extra bytes after its JSON object (byte %zu)", at);
    return 0;
}

static int parse_file(StFile *f, size_t size, AlError *err) {
    if (size < 8)
        return al_fail(err, 1, "file is %zu bytes, too short for a safetensors file (at least 8)",
                       size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->bytes[i];
    if (n > ST_MAX_HEADER)
        return al_fail(err, 1, "header length %" PRIu64 " is absurd (limit %llu bytes): not a "
                       "safetensors file?", n, ST_MAX_HEADER);
    if (n > size - 8)
        return al_fail(err, 1, "header length %" PRIu64 " is larger than the %zu bytes after it: "
                       "file truncated?", n, size - 8);
    f->data = f->bytes + 8 + n;
    f->data_len = size - 8 - n;
    cJSON *root = NULL;
    int rc = parse_json(f->bytes + 8, (size_t)n, &root, err);
    if (!rc) rc = parse_tensors(f, root, err);
    cJSON_Delete(root);
    return rc;
}

/* Takes ownership of bytes (size of them) whether or not they parse. */
static StFile *open_loaded(const char *path, unsigned char *bytes, size_t size, AlError *err) {
    StFile *f = al_calloc(1, sizeof *f);
    f->path = dup_str(path);
    f->bytes = bytes;
    if (parse_file(f, size, err) != 0) {
        al_error_prefix(err, "%s", path);
        st_close(f);
        return NULL;
    }
    return f;
}

StFile *st_open(const char *path, AlError *err) {
    host_check();
    size_t size = 0;
    unsigned char *bytes = read_all(path, &size, err);
    return bytes ? open_loaded(path, bytes, size, err) : NULL;
}

StFile *st_open_memory(const char *name, const void *bytes, size_t size, AlError *err) {
    host_check();
    unsigned char *copy = al_malloc(size + 1);
    if (size) memcpy(copy, bytes, size);
    return open_loaded(name, copy, size, err);
}

/* ---- reading: queries --------------------------------------------------------- */

int st_count(const StFile *f) { return f->n; }

const StInfo *st_info(const StFile *f, int i) {
    AL_ASSERT(i >= 0 && i < f->n);
    return &f->e[i].info;
}

const char *st_name(const StFile *f, int i) { return st_info(f, i)->name; }

int st_find(const StFile *f, const char *name) {
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(name, f->by_name[mid]->info.name);
        if (c == 0) return (int)(f->by_name[mid] - f->e);
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return -1;
}

const char *st_meta(const StFile *f, const char *key) {
    StPair probe = {(char *)key, NULL};
    if (f->n_meta == 0) return NULL;   /* f->meta may be NULL, which bsearch must not get */
    const StPair *p = bsearch(&probe, f->meta, (size_t)f->n_meta, sizeof *f->meta, cmp_pair);
    return p ? p->value : NULL;
}

/* "no tensor 'x' (the file has 12 tensors: a, b, c, d, e, ...)". */
static int not_found(const StFile *f, const char *name, AlError *err) {
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < f->n && i < 5 && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%.60s", i ? ", " : "",
                                 f->e[i].info.name);
    if (f->n == 0)
        return al_fail(err, 1, "%s: no tensor '%.200s' (the file has no tensors)", f->path, name);
    return al_fail(err, 1, "%s: no tensor '%.200s' (the file has %d tensor%s: %s%s)", f->path, name,
                   f->n, f->n == 1 ? "" : "s", list, f->n > 5 ? ", ..." : "");
}

/* The tensor's bytes against its checksum.  required: a tensor without one is an
 * error too; otherwise only when the file has checksums for other tensors (a
 * damaged or edited key), since files of other writers have none at all. */
static int verify_entry(const StFile *f, const StEntry *e, int required, AlError *err) {
    const char *name = e->info.name;
    if (!e->has_crc) {
        if (required)
            return al_fail(err, 1, "%s: tensor '%.200s' has no checksum (no metadata '" ST_CRC_PREFIX "%.200s')",
                           f->path, name, name);
        if (f->n_crc > 0)
            return al_fail(err, 1, "%s: tensor '%.200s' has no checksum (no metadata '" ST_CRC_PREFIX "%.200s') "
                           "though the file has checksums (" ST_CRC_PREFIX "*): the header is damaged or was edited",
                           f->path, name, name);
        return 0;
    }
    uint32_t crc = crc32c(0, f->data + e->begin, (size_t)(e->end - e->begin));
    if (crc != e->crc)
        return al_fail(err, 1, "%s: tensor '%.200s': checksum mismatch (stored %08" PRIx32 ", data %08" PRIx32
                       "): the file is damaged", f->path, name, e->crc, crc);
    return 0;
}

int st_verify(const StFile *f, AlError *err) {
    for (int i = 0; i < f->n; i++) {
        int rc = verify_entry(f, &f->e[i], 1, err);
        if (rc) return rc;
    }
    return 0;
}

int st_read(const StFile *f, const char *name, StDtype dtype, int ndim, const int64_t *shape,
            void *dst, AlError *err) {
    AL_ASSERT((unsigned)dtype < ST_N_DTYPES && ndim >= 0 && (ndim == 0 || shape));
    int i = st_find(f, name);
    if (i < 0) return not_found(f, name, err);
    const StEntry *e = &f->e[i];
    if (e->info.dtype != dtype)
        return al_fail(err, 1, "%s: tensor '%.200s' has dtype %s, expected %s", f->path, name,
                       dtypes[e->info.dtype].name, dtypes[dtype].name);
    int same = e->info.ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = e->info.shape[d] == shape[d];
    if (!same) {
        char have[128], want[128];
        return al_fail(err, 1, "%s: tensor '%.200s' has shape %s, expected %s", f->path, name,
                       fmt_shape(have, sizeof have, e->info.ndim, e->info.shape),
                       fmt_shape(want, sizeof want, ndim, shape));
    }
    int rc = verify_entry(f, e, 0, err);
    if (!rc && e->end > e->begin) memcpy(dst, f->data + e->begin, (size_t)(e->end - e->begin));
    return rc;
}

int st_read_f32(const StFile *f, const char *name, int ndim, const int64_t *shape, float *dst,
                AlError *err) {
    return st_read(f, name, ST_F32, ndim, shape, dst, err);
}
