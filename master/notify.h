/* The sd_notify protocol, spoken directly over $NOTIFY_SOCKET (no libsystemd):
 * READY=1, RELOADING=1, STOPPING=1 and STATUS= lines. Each call is a no-op
 * when not run under systemd. */
#ifndef KV_NOTIFY_H
#define KV_NOTIFY_H

/* Send one datagram such as "READY=1\nSTATUS=serving". Returns 0, or -1
 * (logged once) when the socket exists but the send failed. */
int	kv_notify(const char *msg);

/* Printf-style STATUS= line. */
int	kv_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
