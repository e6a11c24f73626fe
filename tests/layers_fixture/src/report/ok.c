/* Downward and same-module includes pass; an unknown module and a path out of
 * the tree do not. */
#include <stdio.h>
#include "attnlab/util/error.h"
#include "../io/atomic_file.h"
#include "svg_private.h"
#include "attnlab/report/svg.h"
#include "attnlab/plot/plot.h"
#include "../../../outside.h"
