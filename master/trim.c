/* Gives back, after start-up, the pages of shared libraries that serving
 * never touches again; see trim.h. */

#include "master/trim.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct vma {
	uintptr_t	 start, end;
	int		 candidate;	/* read-only and backed by a file */
	long		 rss_kb;
};

static void
vma_header(struct vma *v, const char *line)
{
	char perms[8] = "", path[2] = "";
	unsigned long long start, end, off, inode;
	unsigned int maj, min;

	memset(v, 0, sizeof(*v));
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %1s", &start, &end, perms, &off,
	    &maj, &min, &inode, path) < 7)
		return;
	v->start = (uintptr_t)start;
	v->end = (uintptr_t)end;
	/* r-xp and r--p with a path; never shared or writable mappings (the
	 * ledger is rw-s). */
	v->candidate = inode != 0 && path[0] == '/' && perms[1] == '-' && perms[3] == 'p';
}

long
kv_trim_file_mappings(void)
{
	char line[512];
	struct vma v = { 0 };
	long kb, total = 0;
	FILE *f;

	if ((f = fopen("/proc/self/smaps", "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (line[0] >= 'A' && line[0] <= 'Z') {
			if (sscanf(line, "Rss: %ld kB", &kb) == 1)
				v.rss_kb = kb;
			/* A private copy in a read-only mapping is RELRO after
			 * relocation: its contents exist nowhere else. */
			else if (sscanf(line, "Anonymous: %ld kB", &kb) == 1 && v.candidate &&
			    kb == 0 && v.rss_kb > 0 &&
			    madvise((void *)v.start, v.end - v.start, MADV_DONTNEED) == 0)
				total += v.rss_kb;
			continue;
		}
		vma_header(&v, line);
	}
	fclose(f);
	return total;
}
