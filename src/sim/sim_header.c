/* sim_header.c — the frame's FITS header: what a camera and its acquisition software write
 * (exposure, gain, read noise, saturation, filter, time, optics, pointing), the WCS, and the
 * simulator's own parameters (SIM*) so a frame says how it was made. No wall-clock time goes
 * in, so the same seed gives the same bytes. */
#include <math.h>
#include <stdio.h>

#include "sim_internal.h"
#include "tide/status.h"

static void sexagesimal(double v, int hours, char *out, size_t n) {
    double x = hours ? v / 15.0 : v;
    char sign = x < 0 ? '-' : '+';
    x = fabs(x);
    /* Round once at the printed precision so 59.995 s does not print as 60.00. */
    int prec = hours ? 100 : 10;
    long long t = llround(x * 3600.0 * prec);
    int a = (int)(t / (3600LL * prec)), b = (int)(t / (60LL * prec) % 60);
    double c = (double)(t % (60LL * prec)) / prec;
    if (hours)
        snprintf(out, n, "%02d %02d %05.2f", a, b, c);
    else
        snprintf(out, n, "%c%02d %02d %04.1f", sign, a, b, c);
}

int sim_header_make(const tide_sim_sky *sky, int epoch, int64_t ncosmics, tide_header *h) {
    const tide_sim_params *p = &sky->p;
    const sim_epoch_geom *g = &sky->geom[epoch - 1];
    double ra_c, dec_c; /* the frame centre */
    sim_wcs_pix2sky(&g->wcs, 0.5 * (p->width - 1), 0.5 * (p->height - 1), &ra_c, &dec_c);
    char sra[32], sdec[32];
    sexagesimal(ra_c, 1, sra, sizeof sra);
    sexagesimal(dec_c, 0, sdec, sizeof sdec);
    const double zp_adu = p->zeropoint + 2.5 * log10(p->exptime * g->transparency / p->gain);
    int st = 0;
    tide_header_init(h);
    st |= tide_header_set_str(h, "BUNIT", "adu", "pixel unit");
    st |= tide_header_set_str(h, "TELESCOP", "tide-sim", "simulated telescope");
    st |= tide_header_set_str(h, "INSTRUME", "tide-sim camera", NULL);
    st |= tide_header_set_str(h, "IMAGETYP", "Light Frame", NULL);
    st |= tide_header_set_str(h, "OBJECT", "SIMFIELD", NULL);
    st |= tide_header_set_str(h, "DATE-OBS", g->date_obs, "start of exposure, UTC");
    st |= tide_header_set_dbl(h, "MJD-OBS", g->mjd, "start of exposure, MJD UTC");
    st |= tide_header_set_dbl(h, "EXPTIME", p->exptime, "exposure time, s");
    st |= tide_header_set_dbl(h, "EXPOSURE", p->exptime, "exposure time, s");
    st |= tide_header_set_str(h, "FILTER", p->filter, "filter");
    st |= tide_header_set_dbl(h, "GAIN", p->gain, "e-/ADU");
    st |= tide_header_set_dbl(h, "EGAIN", p->gain, "e-/ADU");
    st |= tide_header_set_dbl(h, "RDNOISE", p->rdnoise, "read noise, e-");
    st |= tide_header_set_dbl(h, "SATURATE", sim_saturate_adu(p), "saturation level, ADU");
    st |= tide_header_set_dbl(h, "FOCALLEN", p->focal_mm, "focal length, mm");
    st |= tide_header_set_dbl(h, "FOCALEN", p->focal_mm, "focal length, mm");
    st |= tide_header_set_dbl(h, "XPIXSZ", p->pixsize_um, "pixel width, microns");
    st |= tide_header_set_dbl(h, "YPIXSZ", p->pixsize_um, "pixel height, microns");
    st |= tide_header_set_int(h, "XBINNING", 1, NULL);
    st |= tide_header_set_int(h, "YBINNING", 1, NULL);
    st |= tide_header_set_dbl(h, "PIXSCALE", g->wcs.scale_deg * 3600.0, "arcsec/pixel");
    st |= tide_header_set_dbl(h, "RA", ra_c, "pointing (frame centre), deg");
    st |= tide_header_set_dbl(h, "DEC", dec_c, "pointing (frame centre), deg");
    st |= tide_header_set_str(h, "OBJCTRA", sra, "pointing RA, hours");
    st |= tide_header_set_str(h, "OBJCTDEC", sdec, "pointing Dec, degrees");
    st |= tide_header_set_int(h, "NCOMBINE", 1, "frames co-added");
    if (st)
        return tide_error(TIDE_E_NOMEM, "sim: cannot build the header");
    if ((st = sim_wcs_to_header(&g->wcs, h)))
        return st;
    st |= tide_header_set_int(h, "SIMSEED", (int64_t)p->seed, "tide sim: random seed");
    st |= tide_header_set_int(h, "SIMEPOCH", epoch, "tide sim: epoch (1 or 2)");
    st |= tide_header_set_int(h, "SIMNSTAR", p->nstars, "tide sim: stars inside the frame");
    st |= tide_header_set_int(h, "SIMNGAL", p->ngalaxies, "tide sim: galaxies");
    st |= tide_header_set_dbl(h, "SIMMAG1", p->mag_bright, "tide sim: brightest star mag");
    st |= tide_header_set_dbl(h, "SIMMAG2", p->mag_faint, "tide sim: faintest star mag");
    st |= tide_header_set_dbl(h, "SIMLFALP", p->lf_alpha, "tide sim: LF slope alpha");
    st |= tide_header_set_dbl(h, "SIMZP", p->zeropoint, "tide sim: mag of 1 e-/s");
    st |= tide_header_set_dbl(h, "SIMZPADU", zp_adu, "tide sim: mag = ZP - 2.5 log10(ADU)");
    st |= tide_header_set_dbl(h, "SIMTRANS", g->transparency, "tide sim: transparency");
    st |= tide_header_set_dbl(h, "SIMCOLT", p->color_term, "tide sim: MAG = REFMAG + c*COLOR");
    st |= tide_header_set_dbl(h, "SIMBIAS", p->bias, "tide sim: bias level, ADU");
    st |= tide_header_set_dbl(h, "SIMFWELL", p->fullwell, "tide sim: full well, e-");
    st |= tide_header_set_dbl(h, "SIMSKY", g->sky, "tide sim: sky at centre, ADU");
    st |= tide_header_set_dbl(h, "SIMFWHM", g->fwhm, "tide sim: PSF FWHM at centre, px");
    st |= tide_header_set_dbl(h, "SIMBETA", g->beta, "tide sim: Moffat beta");
    st |= tide_header_set_dbl(h, "SIMELLIP", g->ellip, "tide sim: PSF ellipticity at centre");
    st |= tide_header_set_bool(h, "SIMNOISE", p->noise, "tide sim: noise on");
    st |= tide_header_set_bool(h, "SIMDEFEC", p->defects, "tide sim: defects on");
    st |= tide_header_set_int(h, "SIMNCR", ncosmics, "tide sim: cosmic-ray tracks");
    st |= tide_header_set_int(h, "SIMNHOT", sky->nhot, "tide sim: hot pixels");
    st |= tide_header_set_int(h, "SIMNBADC", sky->nbad, "tide sim: bad columns");
    st |= tide_header_add_text(h, "HISTORY", "simulated by tide sim " TIDE_VERSION_STRING);
    if (st)
        return tide_error(TIDE_E_NOMEM, "sim: cannot build the header");
    return 0;
}
