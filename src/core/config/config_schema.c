/* config_schema.c — the built-in schema: every configuration key, its type, default, range,
 * unit and meaning. This table is the single place a key is defined; config/default.json
 * repeats the defaults for sites to edit (a unit test keeps the two equal). */
#include <math.h>
#include <string.h>

#include "config_internal.h"

#define NONE_LO (-INFINITY)
#define NONE_HI (INFINITY)

/* Shorthands: keyword map entries, and numbers with ranges. */
#define KW(name, fits, doc)                                                                        \
    { "keywords", name, TIDE_CFG_KEYWORD, fits, NONE_LO, NONE_HI, 0, "", doc }

static const tide_config_key schema[] = {
    /* ---- instrument ---------------------------------------------------------------------- */
    {"instrument", "name", TIDE_CFG_STRING, "generic", NONE_LO, NONE_HI, 0, "",
     "instrument name, written to outputs"},
    {"instrument", "description", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "free text: telescope, camera, where the values come from"},

    /* ---- keywords: internal name -> FITS keyword ------------------------------------------ */
    KW("exptime", "EXPTIME", "exposure time [s]"),
    KW("gain", "GAIN", "gain [e-/ADU]"),
    KW("rdnoise", "RDNOISE", "read noise [e-]"),
    KW("saturate", "SATURATE", "saturation level [ADU]"),
    KW("pixsize", "XPIXSZ", "size of a binned pixel [um] (MaxIm DL / NINA convention)"),
    KW("focallen", "FOCALLEN", "focal length [mm]"),
    KW("filter", "FILTER", "filter name"),
    KW("ra", "RA",
       "pointing right ascension: a number in degrees or a sexagesimal string in "
       "hours"),
    KW("dec", "DEC", "pointing declination: a number or a sexagesimal string, degrees"),
    KW("ncombine", "NCOMBINE", "number of frames co-added into this one"),
    KW("xbinning", "XBINNING", "binning along x"),
    KW("ybinning", "YBINNING", "binning along y"),
    KW("dateobs", "DATE-OBS", "start of the exposure (ISO 8601, UTC)"),
    KW("mjdobs", "MJD-OBS", "start of the exposure [MJD]"),
    KW("airmass", "AIRMASS", "airmass at the start of the exposure"),
    KW("object", "OBJECT", "target or field name"),

    /* ---- camera: defaults when a keyword is missing ---------------------------------------- */
    {"camera", "exptime", TIDE_CFG_NUMBER, NULL, 0.0, NONE_HI, 0, "s", "exposure time"},
    {"camera", "gain", TIDE_CFG_NUMBER, NULL, 0.0, NONE_HI, 1, "e-/ADU",
     "gain (unset: unknown, the noise is measured from the frame with no Poisson term)"},
    {"camera", "rdnoise", TIDE_CFG_NUMBER, "0.0", 0.0, NONE_HI, 0, "e-", "read noise"},
    {"camera", "saturate", TIDE_CFG_NUMBER, NULL, 0.0, NONE_HI, 1, "ADU",
     "saturation level (unset: the frame's SATURATE, else the ceiling of an 8- or 16-bit image)"},
    {"camera", "pixsize_um", TIDE_CFG_NUMBER, NULL, 0.0, NONE_HI, 1, "um",
     "physical (unbinned) pixel size; multiplied by the binning when used"},
    {"camera", "focallen_mm", TIDE_CFG_NUMBER, NULL, 0.0, NONE_HI, 1, "mm", "focal length"},
    {"camera", "filter", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "", "filter name"},
    {"camera", "ncombine", TIDE_CFG_INTEGER, "1", 1.0, NONE_HI, 0, "", "number of co-added frames"},
    {"camera", "xbinning", TIDE_CFG_INTEGER, "1", 1.0, 64.0, 0, "", "binning along x"},
    {"camera", "ybinning", TIDE_CFG_INTEGER, "1", 1.0, 64.0, 0, "", "binning along y"},
    {"camera", "airmass", TIDE_CFG_NUMBER, NULL, 1.0, NONE_HI, 0, "", "airmass"},

    /* ---- processing: stage parameters ------------------------------------------------------ */
    {"processing", "back_size", TIDE_CFG_INTEGER, "64", 4.0, 65536.0, 0, "pixel",
     "side of the background mesh (Source Extractor BACK_SIZE)"},
    {"processing", "back_filtersize", TIDE_CFG_INTEGER, "3", 1.0, 31.0, 0, "mesh",
     "median filter over background meshes (BACK_FILTERSIZE)"},
    {"processing", "back_clip_sigma", TIDE_CFG_NUMBER, "3.0", 0.0, NONE_HI, 1, "sigma",
     "sigma clipping of background mesh statistics"},
    {"processing", "detect_thresh", TIDE_CFG_NUMBER, "5.0", 0.0, NONE_HI, 1, "sigma",
     "detection threshold: peak S/N of the matched-filtered image"},
    {"processing", "detect_minarea", TIDE_CFG_INTEGER, "5", 1.0, NONE_HI, 0, "pixel",
     "fewest connected pixels above threshold for a detection"},
    {"processing", "deblend_nthresh", TIDE_CFG_INTEGER, "32", 1.0, 256.0, 0, "",
     "deblending sub-thresholds (DEBLEND_NTHRESH)"},
    {"processing", "deblend_cont", TIDE_CFG_NUMBER, "0.005", 0.0, 1.0, 0, "",
     "minimum flux fraction of a deblended branch (DEBLEND_MINCONT)"},
    {"processing", "fwhm_guess", TIDE_CFG_NUMBER, "3.0", 0.0, NONE_HI, 1, "pixel",
     "starting PSF FWHM before the PSF is measured"},
    {"processing", "psf_stamp", TIDE_CFG_INTEGER, "25", 5.0, 255.0, 0, "pixel",
     "side of PSF star stamps (rounded up to odd)"},
    {"processing", "psf_nstars", TIDE_CFG_INTEGER, "300", 1.0, NONE_HI, 0, "",
     "most stars used to build the PSF model"},
    {"processing", "psf_neigen", TIDE_CFG_INTEGER, "5", 0.0, 32.0, 0, "",
     "eigen-PSFs describing PSF variation over the field (0: constant PSF)"},
    {"processing", "aper_radii", TIDE_CFG_ARRAY, "3,5,8", 0.0, NONE_HI, 1, "pixel",
     "aperture photometry radii"},
    {"processing", "clean_cosmics", TIDE_CFG_BOOL, "true", NONE_LO, NONE_HI, 0, "",
     "detect and mask cosmic rays before detection"},
    {"processing", "cr_sigma", TIDE_CFG_NUMBER, "5.0", 0.0, NONE_HI, 1, "sigma",
     "cosmic ray detection threshold (Laplacian S/N, van Dokkum 2001)"},
    {"processing", "match_radius_arcsec", TIDE_CFG_NUMBER, "2.0", 0.0, NONE_HI, 1, "arcsec",
     "crossmatch radius against the reference catalog"},

    /* ---- site: where the telescope is (airmass, altitude, Sun and Moon) -------------------- */
    {"site", "longitude_deg", TIDE_CFG_NUMBER, NULL, -180.0, 360.0, 0, "deg",
     "geodetic longitude, east positive (unset: no altitude, Sun or Moon keywords)"},
    {"site", "latitude_deg", TIDE_CFG_NUMBER, NULL, -90.0, 90.0, 0, "deg", "geodetic latitude"},
    {"site", "height_m", TIDE_CFG_NUMBER, "0.0", -500.0, 10000.0, 0, "m",
     "height above the WGS84 ellipsoid"},

    /* ---- astrometry: plate solving and the WCS fit ---------------------------------------- */
    {"astrometry", "enabled", TIDE_CFG_BOOL, "true", NONE_LO, NONE_HI, 0, "",
     "solve or refine the WCS when a reference catalog is given"},
    {"astrometry", "index_dir", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "astrometry.net index files (unset: $TIDE_INDEX_DIR, else /usr/share/astrometry)"},
    {"astrometry", "timeout_s", TIDE_CFG_NUMBER, "10.0", 0.0, 86400.0, 1, "s",
     "wall-clock bound of the whole solve of a frame, all attempts ($TIDE_SOLVE_TIMEOUT "
     "overrides)"},
    {"astrometry", "nbright", TIDE_CFG_INTEGER, "500", 10.0, 100000.0, 0, "",
     "brightest detections given to the solver"},
    {"astrometry", "scale_tolerance", TIDE_CFG_NUMBER, "0.1", 0.0, 0.9, 1, "",
     "fractional range around the expected pixel scale for a hinted solve"},
    {"astrometry", "hint_radius_deg", TIDE_CFG_NUMBER, "2.0", 0.0, 180.0, 1, "deg",
     "uncertainty of the header pointing for a hinted solve (the search radius adds the "
     "field's half-diagonal)"},
    {"astrometry", "blind", TIDE_CFG_BOOL, "true", NONE_LO, NONE_HI, 0, "",
     "try a blind solve when the hinted one fails"},
    {"astrometry", "sip_order", TIDE_CFG_INTEGER, "3", 0.0, 5.0, 0, "",
     "order of the SIP distortion polynomial of the refined WCS (0: pure TAN)"},

    /* ---- refcat: the reference catalog ------------------------------------------------------ */
    {"refcat", "path", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "reference catalog: FITS or CSV file, or pg:/postgresql:// URI of a Q3C table"},
    {"refcat", "table", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "table name when the reference catalog is in PostgreSQL"},
    {"refcat", "command", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "command writing a CSV/FITS reference catalog for {ra} {dec} {radius} (degrees)"},
    {"refcat", "ra_column", TIDE_CFG_STRING, "RA", NONE_LO, NONE_HI, 0, "",
     "right ascension column (deg)"},
    {"refcat", "dec_column", TIDE_CFG_STRING, "DEC", NONE_LO, NONE_HI, 0, "",
     "declination column (deg)"},
    {"refcat", "mag_column", TIDE_CFG_STRING, "MAG", NONE_LO, NONE_HI, 0, "",
     "magnitude column in the calibration band"},
    {"refcat", "magerr_column", TIDE_CFG_STRING, "MAGERR", NONE_LO, NONE_HI, 0, "",
     "magnitude error column (optional)"},
    {"refcat", "color_column", TIDE_CFG_STRING, "COLOR", NONE_LO, NONE_HI, 0, "",
     "colour index column (optional)"},
    {"refcat", "band", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "name of the reference band, written as ZPBAND"},
    {"refcat", "cache_dir", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "cache of per-field reference catalogs (unset: $TIDE_REFCAT_CACHE, else no cache)"},

    /* ---- photcal: zero point ---------------------------------------------------------------- */
    {"photcal", "snr_min", TIDE_CFG_NUMBER, "20.0", 0.0, NONE_HI, 0, "",
     "faintest calibration star, detection S/N"},
    {"photcal", "snr_max", TIDE_CFG_NUMBER, "2000.0", 0.0, NONE_HI, 1, "",
     "brightest calibration star, detection S/N (saturated stars are always cut)"},
    {"photcal", "color_min", TIDE_CFG_NUMBER, NULL, NONE_LO, NONE_HI, 0, "",
     "bluest calibration star (unset: no cut)"},
    {"photcal", "color_max", TIDE_CFG_NUMBER, NULL, NONE_LO, NONE_HI, 0, "",
     "reddest calibration star (unset: no cut)"},
    {"photcal", "edge_pixels", TIDE_CFG_NUMBER, "20.0", 0.0, NONE_HI, 0, "pixel",
     "calibration stars keep this far from the frame edges"},
    {"photcal", "clip_sigma", TIDE_CFG_NUMBER, "3.0", 0.0, NONE_HI, 1, "sigma",
     "sigma clipping of the zero-point residuals"},
    {"photcal", "color_term", TIDE_CFG_NUMBER, NULL, NONE_LO, NONE_HI, 0, "",
     "fixed colour term c of MAG = REF_MAG + c*COLOR (unset: none, or fitted when fit_color)"},
    {"photcal", "fit_color", TIDE_CFG_BOOL, "false", NONE_LO, NONE_HI, 0, "",
     "fit the colour term together with the zero point"},

    /* ---- store: where calibrated catalogs go ------------------------------------------------ */
    {"store", "uri", TIDE_CFG_STRING, NULL, NONE_LO, NONE_HI, 0, "",
     "catalog store: sqlite:PATH or PATH.db, postgresql://... or pg:CONNINFO (unset: $TIDE_STORE)"},
    {"store", "object_radius_arcsec", TIDE_CFG_NUMBER, "1.0", 0.0, 3600.0, 1, "arcsec",
     "a difference candidate this close to a stored object is another detection of it"},
    {"store", "cutout_px", TIDE_CFG_INTEGER, "63", 5.0, 255.0, 0, "pixel",
     "side of the science, template and difference cutouts stored with each candidate"},

    /* ---- output: how image files are written ---------------------------------------------- */
    {"output", "compress", TIDE_CFG_STRING, "none", NONE_LO, NONE_HI, 0, "",
     "image outputs (difference, background, rms maps): none, or rice (RICE_1 tiles, floats "
     "quantized as fpack -q 4)"},
};

static const char *const sections[] = {"instrument", "keywords", "camera",  "processing", "site",
                                       "astrometry", "refcat",   "photcal", "store",      "output"};

const tide_config_key *tide_config_schema(int *n) {
    if (n)
        *n = (int)(sizeof schema / sizeof schema[0]);
    return schema;
}

int tide_cfg_section_known(const char *section) {
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!strcmp(section, sections[i]))
            return 1;
    return 0;
}

int tide_cfg_index(const char *section, const char *name) {
    for (int i = 0; i < (int)(sizeof schema / sizeof schema[0]); i++)
        if (!strcmp(schema[i].section, section) && !strcmp(schema[i].name, name))
            return i;
    return -1;
}

int tide_cfg_index_dotted(const char *dotted) {
    const char *dot = dotted ? strchr(dotted, '.') : NULL;
    if (!dot || dot - dotted >= 32)
        return -1;
    char section[32];
    memcpy(section, dotted, (size_t)(dot - dotted));
    section[dot - dotted] = '\0';
    return tide_cfg_index(section, dot + 1);
}

/* Optimal string alignment distance (Levenshtein plus adjacent transposition), for
 * "did you mean" hints; names are short, so the O(n*m) table is tiny. */
static int edit_distance(const char *a, const char *b) {
    int n = (int)strlen(a), m = (int)strlen(b);
    if (n > 40 || m > 40)
        return 99;
    int d[41][41];
    for (int i = 0; i <= n; i++)
        d[i][0] = i;
    for (int j = 0; j <= m; j++)
        d[0][j] = j;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

const char *tide_cfg_suggest(const char *section, const char *name) {
    const char *best = NULL;
    int best_d = 3; /* more than two edits away is not a typo */
    if (!section) {
        for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
            int d = edit_distance(name, sections[i]);
            if (d < best_d)
                best_d = d, best = sections[i];
        }
        return best;
    }
    for (size_t i = 0; i < sizeof schema / sizeof schema[0]; i++) {
        if (strcmp(schema[i].section, section))
            continue;
        int d = edit_distance(name, schema[i].name);
        if (d < best_d)
            best_d = d, best = schema[i].name;
    }
    return best;
}
