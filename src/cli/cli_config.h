/* cli_config.h — the configuration options of the commands that read instrument
 * configurations (--config, --default, --set), parsed and loaded one way. */
#ifndef TIDE_CLI_CONFIG_H
#define TIDE_CLI_CONFIG_H
#include "tide/config.h"

/** The configuration options of a command line. */
typedef struct tide_cli_config {
    const char *instrument; /**< --config FILE, or NULL */
    const char *def;        /**< --default FILE ("" for none), or NULL: searched */
    char **sets;            /**< --set assignments as "section.key=value" (owned) */
    int nsets;
} tide_cli_config;

/** If argv[*i] is --config, --default or --set, consume it and its value (advancing *i) and
 *  return 1; 0 if it is none of them; -1 after a usage message for a missing or malformed
 *  value. A --set KEY without a section is processing.KEY, as for tide reduce. */
int tide_cli_config_option(tide_cli_config *c, const char *cmd, int argc, char **argv, int *i);

/** --compress NAME: "output.compress=NAME" appended to @p sets (@p nsets entries, room for
 *  one more) after checking NAME (tide_fits_compress_parse). 0, or -1 after a usage message
 *  (or out of memory). */
int tide_cli_compress_option(const char *cmd, const char *name, char **sets, int *nsets);

/** Load the configuration the options name (tide_config_load): 0, or the status with the
 *  error recorded (FILE:LINE:COLUMN or the --set assignment). */
int tide_cli_config_load(const tide_cli_config *c, tide_config **out);

/** Free the assignments. */
void tide_cli_config_free(tide_cli_config *c);

/** Help text of the options. */
extern const char *tide_cli_config_help;

#endif
