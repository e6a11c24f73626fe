/* fpenv.c — see fpenv.h. */
#include "attnlab/util/fpenv.h"

#if defined(__x86_64__) || defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>

void fpenv_flush_denormals(void) {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}

int fpenv_flushing(void) {
    return _MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON &&
           _MM_GET_DENORMALS_ZERO_MODE() == _MM_DENORMALS_ZERO_ON;
}
#else
void fpenv_flush_denormals(void) {}

int fpenv_flushing(void) { return -1; }
#endif
