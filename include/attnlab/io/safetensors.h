/* safetensors.h — read and write the safetensors tensor file format.
 *
 * Layout: an 8-byte little-endian u64 N, N bytes of UTF-8 JSON header, then the data
 * buffer.  The header maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (byte offsets into the data buffer), plus an optional "__metadata__"
 * object of string → string.  Why this format: PyTorch, NumPy and JAX read it with a
 * few lines of code, it cannot execute anything (unlike pickle), and a loader can
 * check every byte range before it trusts one.
 *
 * st_write() writes tensors contiguously in the order given, the header padded with
 * spaces to a multiple of 8 (so the data is 8-aligned, as the reference writer does),
 * through atomic_write().  st_open() loads the whole file and validates all of it —
 * header length, JSON, every entry, offsets against shapes, full coverage of the data
 * buffer without overlaps or holes, duplicate names — so reads after it can only fail
 * on a missing name, a dtype/shape mismatch or a checksum.  Every error names the
 * file; code 1.  Data is copied raw, so the host must be little-endian (checked at
 * compile time).
 *
 * Checksums.  Header validation cannot see a flipped bit in the data buffer, so
 * st_write adds to "__metadata__" one key per tensor, "crc32c.NAME" (NAME the
 * tensor's name), whose value is the CRC-32C (crc32c.h) of the tensor's bytes as
 * 8 lowercase hex digits: {"crc32c.params": "1a2b3c4d"}.  Any safetensors reader
 * sees ordinary metadata; a verifier needs only the header and a CRC-32C.
 * st_open checks that every "crc32c.*" value is 8 hex digits.  st_read verifies the
 * tensor's checksum before copying it out and refuses a mismatch ("F: tensor 'T':
 * checksum mismatch (stored …, data …): the file is damaged").  Files of other
 * writers (PyTorch's safetensors, attnlab before checksums) have no "crc32c.*" key
 * and read unverified; but in a file that has checksums, a tensor without one is
 * refused (its key was damaged or the file was edited).  A tool that changes a
 * tensor's data must update or drop its "crc32c.NAME" key. */
#ifndef ATTNLAB_IO_SAFETENSORS_H
#define ATTNLAB_IO_SAFETENSORS_H

#include "attnlab/util/error.h"

#include <stdint.h>

#define ST_MAX_DIM 4                  /* most dimensions st_write() takes per tensor */
#define ST_MAX_HEADER 100000000ull    /* larger headers are rejected (as the reference does) */
#define ST_CRC_PREFIX "crc32c."       /* metadata key prefix of the tensors' checksums */

/* Every dtype of the spec with a whole-byte element; the zero value is F32. */
typedef enum StDtype {
    ST_F32 = 0, ST_F64, ST_F16, ST_BF16, ST_F8_E4M3, ST_F8_E5M2,
    ST_I64, ST_I32, ST_I16, ST_I8, ST_U64, ST_U32, ST_U16, ST_U8, ST_BOOL,
    ST_N_DTYPES
} StDtype;

const char *st_dtype_name(StDtype d);   /* "F32", ... */
int st_dtype_size(StDtype d);           /* bytes per element */

/* ---- writing ------------------------------------------------------------------ */

/* One tensor to write: row-major data of shape[0..ndim-1] (ndim 0 is a scalar).
 * dtype defaults to ST_F32 when left zero, so {name, ndim, {shape}, floats} works. */
typedef struct StTensor {
    const char *name;
    int ndim;
    int64_t shape[ST_MAX_DIM];
    const void *data;
    StDtype dtype;
} StTensor;

typedef struct StMeta { const char *key, *value; } StMeta;

/* Writes n tensors, n_meta metadata pairs and the n checksums to path, atomically
 * (no "__metadata__" only when there is nothing to put in it).  Rejects NULL,
 * duplicate or reserved names (tensor "__metadata__", metadata keys "crc32c.*"),
 * bad shapes and duplicate metadata keys before touching the disk.  Returns 0 or
 * err->code (1). */
int st_write(const char *path, const StTensor *t, int n, const StMeta *meta, int n_meta,
             AlError *err);

/* ---- reading ------------------------------------------------------------------ */

typedef struct StFile StFile;       /* a loaded, fully validated file */

typedef struct StInfo {
    const char *name;
    StDtype dtype;
    int ndim;
    const int64_t *shape;           /* ndim entries */
} StInfo;

StFile *st_open(const char *path, AlError *err);   /* NULL with err set on failure */
/* st_open of a file already in memory (copied; `name` stands for the file name in
 * messages).  The entry point for fuzzing. */
StFile *st_open_memory(const char *name, const void *bytes, size_t size, AlError *err);
void st_close(StFile *f);                          /* NULL is fine */

int st_count(const StFile *f);                     /* tensors, in header order */
const char *st_name(const StFile *f, int i);
const StInfo *st_info(const StFile *f, int i);
int st_find(const StFile *f, const char *name);    /* index, or -1 */
const char *st_meta(const StFile *f, const char *key);   /* NULL if absent */

/* Copies tensor `name` into dst after checking its dtype, exact shape and checksum
 * (when the file has checksums); errors like "m.safetensors: tensor 'wq' has shape
 * (64,64), expected (128,128)".  dst is untouched on failure. */
int st_read(const StFile *f, const char *name, StDtype dtype, int ndim,
            const int64_t *shape, void *dst, AlError *err);
int st_read_f32(const StFile *f, const char *name, int ndim, const int64_t *shape,
                float *dst, AlError *err);
/* Verifies every tensor's checksum, each one required: for files attnlab wrote
 * (an integrity check of a run folder).  Returns 0 or err->code (1). */
int st_verify(const StFile *f, AlError *err);

#endif
