/* A public header including downward. */
#include "attnlab/io/atomic_file.h"
