/* An upward include by the public path: util must not know report. */
#include "attnlab/report/svg.h"
#include "attnlab/util/error.h"
