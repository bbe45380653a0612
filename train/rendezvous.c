/* The place of a process among several, and rank 0's blob handed to the others (rendezvous.h). */
#include "rendezvous.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* --- the environment ------------------------------------------------------------------------- */

/* name's value as an integer in [lo, hi]: 1 when set and good, 0 when unset, -1 (err) else. */
static int env_int(const char *name, long lo, long hi, int *out, char *err, size_t errlen)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return tt_errf(err, errlen, "%s=%s: not an integer from %ld to %ld", name, v, lo, hi);
    *out = (int)x;
    return 1;
}

int tt_dist_from_env(tt_dist_env *e, char *err, size_t errlen)
{
    static const struct {
        const char *from, *rank, *world, *local;
    } sets[] = {{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
                {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
                {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}};
    memset(e, 0, sizeof *e);
    e->world = 1;
    e->from = "none";
    snprintf(e->addr, sizeof e->addr, "127.0.0.1");
    e->port = 29500;
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        if (!getenv(sets[s].world) && !getenv(sets[s].rank)) continue;
        int world = 0, rank = 0, local = 0, rc;
        if ((rc = env_int(sets[s].world, 1, 1 << 20, &world, err, errlen)) <= 0)
            return rc < 0 ? -1 : tt_errf(err, errlen, "%s is set, %s is not", sets[s].rank, sets[s].world);
        if ((rc = env_int(sets[s].rank, 0, world - 1, &rank, err, errlen)) <= 0)
            return rc < 0 ? -1 : tt_errf(err, errlen, "%s is set, %s is not", sets[s].world, sets[s].rank);
        if ((rc = env_int(sets[s].local, 0, world - 1, &local, err, errlen)) < 0) return -1;
        if (rc == 0 && world > 1)
            return tt_errf(err, errlen, "%s is unset (which GPU of its host rank %d takes)",
                           sets[s].local, rank);
        e->rank = rank, e->world = world, e->local = local, e->from = sets[s].from;
        break;
    }
    const char *addr = getenv("MASTER_ADDR");
    if (addr && *addr) {
        if (strlen(addr) >= sizeof e->addr) return tt_errf(err, errlen, "MASTER_ADDR is too long");
        snprintf(e->addr, sizeof e->addr, "%s", addr);
    }
    /* TT_MASTER_PORT, else MASTER_PORT; torchrun's agent holds its own store on MASTER_PORT
     * (TORCHELASTIC_USE_AGENT_STORE=True), so there the port after it */
    int rc = env_int("TT_MASTER_PORT", 1, 65535, &e->port, err, errlen);
    if (rc != 0) return rc < 0 ? -1 : 0;
    if (env_int("MASTER_PORT", 1, 65535, &e->port, err, errlen) < 0) return -1;
    const char *agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    if (agent && !strcasecmp(agent, "true")) {
        if (e->port == 65535)
            return tt_errf(err, errlen, "MASTER_PORT=65535 is torchrun's store, and no port "
                           "follows it: set TT_MASTER_PORT");
        e->port++;
    }
    return 0;
}

/* --- the exchange ---------------------------------------------------------------------------- */

#define HELLO_MAGIC 0x54545256u /* "TTRV" */
#define REPLY_OK 0x54544f4bu    /* "TTOK" */
#define REPLY_NO 0x54544e4fu    /* "TTNO" */

/* what a rank says: magic, rank, world, n; and rank 0's answer: OK (then the blob) or NO and a
 * reason, both in network byte order */
typedef struct {
    uint32_t magic, rank, world, n;
} hello;
typedef struct {
    uint32_t magic, why;
} reply;
enum { WHY_RANK = 1, WHY_TWICE, WHY_WORLD, WHY_SIZE, WHY_GAVE_UP };

static const char *why_text(uint32_t why)
{
    switch (why) {
    case WHY_RANK: return "its rank is out of the world's range";
    case WHY_TWICE: return "another process already said it is that rank";
    case WHY_WORLD: return "rank 0 runs another world size";
    case WHY_SIZE: return "rank 0 hands over a blob of another size";
    case WHY_GAVE_UP: return "rank 0 gave up: not every rank connected in time";
    default: return "unknown";
    }
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int left_ms(double deadline)
{
    const double l = deadline - now_ms();
    return l <= 0 ? 0 : l > 1e9 ? 1000000000 : (int)l;
}

/* Waits until fd is ready for events, or the deadline: 1, 0 (time out), -1 (error). */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        const int r = poll(&p, 1, left_ms(deadline));
        if (r < 0 && errno == EINTR) continue;
        return r < 0 ? -1 : r > 0;
    }
}

/* All n bytes through fd before the deadline: 0, or -1 (errno; ETIMEDOUT at the deadline,
 * ECONNRESET when the peer closed early). */
static int send_all(int fd, const void *buf, size_t n, double deadline)
{
    for (size_t done = 0; done < n;) {
        const int w = wait_fd(fd, POLLOUT, deadline);
        if (w <= 0) {
            if (w == 0) errno = ETIMEDOUT;
            return -1;
        }
        const ssize_t k = send(fd, (const char *)buf + done, n - done, MSG_NOSIGNAL);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k < 0) return -1;
        done += (size_t)k;
    }
    return 0;
}

static int recv_all(int fd, void *buf, size_t n, double deadline)
{
    for (size_t done = 0; done < n;) {
        const int w = wait_fd(fd, POLLIN, deadline);
        if (w <= 0) {
            if (w == 0) errno = ETIMEDOUT;
            return -1;
        }
        const ssize_t k = recv(fd, (char *)buf + done, n - done, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k == 0) return errno = ECONNRESET, -1;
        if (k < 0) return -1;
        done += (size_t)k;
    }
    return 0;
}

static void send_reply(int fd, uint32_t magic, uint32_t why, double deadline)
{
    const reply r = {htonl(magic), htonl(why)};
    (void)send_all(fd, &r, sizeof r, deadline);
}

/* Rank 0: every other rank's hello, then the blob to each. */
static int serve(const tt_dist_env *e, const void *blob, size_t n, double deadline, char *err,
                 size_t errlen)
{
    /* every interface, IPv6 and IPv4 peers alike; IPv4 alone where the host has no IPv6 */
    int ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool v6 = ls >= 0;
    if (!v6) ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0) return tt_errf(err, errlen, "rendezvous: socket: %s", strerror(errno));
    const int one = 1, zero = 0;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in6 a6 = {0};
    struct sockaddr_in a4 = {0};
    if (v6) {
        setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = in6addr_any;
        a6.sin6_port = htons((uint16_t)e->port);
    } else {
        a4.sin_family = AF_INET;
        a4.sin_addr.s_addr = htonl(INADDR_ANY);
        a4.sin_port = htons((uint16_t)e->port);
    }
    const struct sockaddr *a = v6 ? (const struct sockaddr *)&a6 : (const struct sockaddr *)&a4;
    if (bind(ls, a, v6 ? sizeof a6 : sizeof a4) != 0 || listen(ls, e->world) != 0) {
        const int code = errno;
        close(ls);
        return tt_errf(err, errlen, "rendezvous: rank 0 cannot listen on port %d: %s", e->port,
                       strerror(code));
    }
    int *fd = tt_xcalloc((size_t)e->world, sizeof *fd);
    for (int r = 0; r < e->world; r++) fd[r] = -1;
    int joined = 1, rc = 0;
    while (joined < e->world && rc == 0) {
        if (wait_fd(ls, POLLIN, deadline) <= 0) break; /* the deadline: below */
        const int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        hello h;
        if (recv_all(c, &h, sizeof h, deadline) != 0 || ntohl(h.magic) != HELLO_MAGIC) {
            close(c); /* not one of ours, or gone: wait for the next */
            continue;
        }
        const uint32_t r = ntohl(h.rank);
        const uint32_t why = ntohl(h.world) != (uint32_t)e->world ? WHY_WORLD
                             : ntohl(h.n) != (uint32_t)n          ? WHY_SIZE
                             : r == 0 || r >= (uint32_t)e->world  ? WHY_RANK
                             : fd[r] >= 0                         ? WHY_TWICE
                                                                  : 0;
        if (why) {
            send_reply(c, REPLY_NO, why, deadline);
            close(c);
            if (why == WHY_WORLD || why == WHY_SIZE) { /* another run's process: this one's broken */
                rc = tt_errf(err, errlen, "rendezvous: a rank %u says the world is %u ranks and the "
                             "blob %u bytes, rank 0 runs %d and %zu", r, ntohl(h.world),
                             ntohl(h.n), e->world, n);
            }
            continue;
        }
        fd[r] = c;
        joined++;
    }
    if (joined < e->world && rc == 0) { /* the deadline: name the missing ranks */
        char missing[256] = "";
        size_t at = 0;
        int count = 0;
        for (int r = 1; r < e->world; r++)
            if (fd[r] < 0 && count++ < 8 && at < sizeof missing)
                at += (size_t)snprintf(missing + at, sizeof missing - at, "%s%d", at ? ", " : "", r);
        rc = tt_errf(err, errlen, "rendezvous: rank%s %s%s of %d did not connect to port %d in time",
                     count > 1 ? "s" : "", missing, count > 8 ? ", ..." : "", e->world, e->port);
    }
    for (int r = 1; r < e->world; r++) {
        if (fd[r] < 0) continue;
        if (rc == 0) {
            const reply ok = {htonl(REPLY_OK), 0};
            if (send_all(fd[r], &ok, sizeof ok, deadline) != 0 ||
                send_all(fd[r], blob, n, deadline) != 0)
                rc = tt_errf(err, errlen, "rendezvous: sending to rank %d: %s", r, strerror(errno));
        } else {
            send_reply(fd[r], REPLY_NO, WHY_GAVE_UP, deadline);
        }
        close(fd[r]);
    }
    free(fd);
    close(ls);
    return rc;
}

/* A connection to rank 0, retried until it listens or the deadline; -1 (err) at the deadline. */
static int dial(const tt_dist_env *e, double deadline, char *err, size_t errlen)
{
    char port[16];
    snprintf(port, sizeof port, "%d", e->port);
    const struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    const int g = getaddrinfo(e->addr, port, &hints, &ai);
    if (g != 0)
        return tt_errf(err, errlen, "rendezvous: MASTER_ADDR %s: %s", e->addr, gai_strerror(g));
    int last = 0;
    for (;;) {
        for (const struct addrinfo *p = ai; p; p = p->ai_next) {
            const int s = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
            if (s < 0) continue;
            if (connect(s, p->ai_addr, p->ai_addrlen) == 0) {
                freeaddrinfo(ai);
                const int one = 1;
                setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                return s;
            }
            last = errno;
            close(s);
        }
        if (left_ms(deadline) == 0) break;
        const struct timespec pause = {0, 50 * 1000 * 1000}; /* rank 0 may not listen yet */
        nanosleep(&pause, NULL);
    }
    freeaddrinfo(ai);
    return tt_errf(err, errlen, "rendezvous: rank %d cannot reach rank 0 at %s:%d in time: %s",
                   e->rank, e->addr, e->port, strerror(last));
}

/* Any other rank: its hello, rank 0's answer, the blob. Once connected it waits for the answer
 * up to a second past the deadline, so that rank 0's verdict, not the rank's own clock, ends an
 * exchange that fails at the deadline (rank 0 names the missing ranks to everyone). */
static int join(const tt_dist_env *e, void *blob, size_t n, double deadline, char *err,
                size_t errlen)
{
    const int s = dial(e, deadline, err, errlen);
    if (s < 0) return -1;
    deadline += 1000;
    const hello h = {htonl(HELLO_MAGIC), htonl((uint32_t)e->rank), htonl((uint32_t)e->world),
                     htonl((uint32_t)n)};
    reply r;
    int rc = 0;
    if (send_all(s, &h, sizeof h, deadline) != 0 || recv_all(s, &r, sizeof r, deadline) != 0)
        rc = tt_errf(err, errlen, "rendezvous: rank %d heard nothing from rank 0 at %s:%d: %s",
                     e->rank, e->addr, e->port, strerror(errno));
    else if (ntohl(r.magic) != REPLY_OK)
        rc = tt_errf(err, errlen, "rendezvous: rank 0 refused rank %d: %s", e->rank,
                     ntohl(r.magic) == REPLY_NO ? why_text(ntohl(r.why)) : "not a rendezvous");
    else if (recv_all(s, blob, n, deadline) != 0)
        rc = tt_errf(err, errlen, "rendezvous: rank %d lost rank 0 at %s:%d: %s", e->rank,
                     e->addr, e->port, strerror(errno));
    close(s);
    return rc;
}

int tt_rendezvous(const tt_dist_env *e, void *blob, size_t n, int timeout_ms, char *err,
                  size_t errlen)
{
    TT_ASSERT(e->world >= 1 && e->rank >= 0 && e->rank < e->world && n <= UINT32_MAX);
    if (e->world == 1) return 0;
    const double deadline = now_ms() + timeout_ms;
    return e->rank == 0 ? serve(e, blob, n, deadline, err, errlen)
                        : join(e, blob, n, deadline, err, errlen);
}
