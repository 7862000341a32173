/* subtract_degree.c — the kernel-degree policy of the subtraction (subtract.h): how far the
 * kernel may vary over the field for the stars a pair of frames has. */
#include "subtract_math.h"
#include "tide/subtract.h"

int tide_subtract_degree_for_stars(int degree, int64_t nstars) {
    /* Real frames vary even over 256 px: the DECam pair OBS18 leaves 1.6 sigma residuals with
     * a constant kernel, 0.97 with degree 1 from 5 stars. So the degree is lowered only as far
     * as the stars require: more stars than polynomial terms. The basis is not lowered with
     * the star count: a few bright stars hold thousands of fit pixels, and a basis cut to
     * three functions per star (as it once was) cannot shape a sub-pixel kernel: the
     * walkthrough's 3 stars left 10-20 sigma residuals with degrees 1 1 2, 0.8 sigma with
     * 6 4 2. The noise bias of the kernel sum that the cut was meant to curb is the
     * regressor's, and the stamp sums remove it (subtract_fit.c). */
    if (nstars < 0)
        return degree;
    while (degree > 0 && tide_sub_npoly(degree) > nstars - 1)
        degree--;
    return degree;
}
