/* The two ledger sizes the config is checked against, here so that common/
 * never includes shm/: shm/ledger-t.h includes this header and lays its
 * slots out with them, and config.c and config_int.h bound the keys that
 * must fit them. */
#ifndef KV_LEDGER_SIZES_H
#define KV_LEDGER_SIZES_H

#define KV_WORKER_SLOTS		64	/* room for two generations during a reload */
#define KV_LABEL_MAX		48	/* a key's label, with its NUL */

#endif
