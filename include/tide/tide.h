/* tide.h — the whole public API. Include this, or the module headers one by one. */
#ifndef TIDE_TIDE_H
#define TIDE_TIDE_H

#include "tide/status.h"
#include "tide/log.h"
#include "tide/memory.h"
#include "tide/image.h"
#include "tide/table.h"
#include "tide/ctx.h"
#include "tide/timer.h"
#include "tide/coords.h"
#include "tide/header.h"
#include "tide/fits.h"
#include "tide/config.h"
#include "tide/instrument.h"
#include "tide/fft.h"
#include "tide/wcs.h"
#include "tide/reduce.h"
#include "tide/sim.h"
#include "tide/photometry.h"
#include "tide/psf.h"
#include "tide/background.h"
#include "tide/detect.h"
#include "tide/cosmetics.h"
#include "tide/pipeline.h"
#include "tide/catalog.h"
#include "tide/png.h"
#include "tide/diffpipe.h"
#include "tide/subtract.h"
#include "tide/reproject.h"
#include "tide/dipole.h"

#endif
