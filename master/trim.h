/* Start-up leaves pages of shared libraries mapped that serving never
 * touches again (relocation tables, libgnutls's initialisation, pulled in
 * by libmicrohttpd). */
#ifndef KV_TRIM_H
#define KV_TRIM_H

/* Unmap the pages of this process's read-only file mappings that hold no
 * private copy (smaps "Anonymous: 0 kB"): they stay in the page cache and
 * fault back in when touched, so nothing changes but what the process maps.
 * Writable mappings and mappings with copied-on-write pages (RELRO after
 * relocation) are left alone: dropping those would lose their contents.
 * Returns the kB unmapped, or -1 when /proc/self/smaps cannot be read. */
long	kv_trim_file_mappings(void);

#endif
