/* A module docs/layers.txt does not list. */
#include "attnlab/util/error.h"
