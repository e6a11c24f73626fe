/* An upward include by a relative path. */
#include "../anna/lsh.h"
#include "../util/fastmath.h"
