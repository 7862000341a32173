/* reduce_calib.h — what `tide reduce` prints about the calibration (calibrate.h). */
#ifndef TIDE_CLI_REDUCE_CALIB_H
#define TIDE_CLI_REDUCE_CALIB_H
#include <stdio.h>

#include "tide/calibrate.h"

/** Print what the calibration did: text lines, or JSON members (each line ",\n  \"key\": ..."
 *  so it can follow the other members of an object). */
void tide_reduce_calib_print(FILE *f, const tide_calib_result *c, int json);

#endif
