/* hog: a fake build tool with real memory use, for rigops tests.
 *
 *   hog [-T] [-g RATE] MB [SECONDS] [-- CHILD ARGS... [-- CHILD ARGS...]...]
 *
 * Allocates MB MiB and touches every page (so the RSS is real) -- at once, or with -g at RATE MiB a second
 * (a compiler whose memory grows while it works) -- starts each CHILD (a path, exec'd as is,
 * so copies of this program named like real tools make a realistic process tree), then:
 *   - with children: waits for all of them and exits 0, like a build driver;
 *   - without: sleeps SECONDS (default: forever) and exits 0.
 * -T ignores SIGTERM (children get the default back), to exercise SIGTERM -> grace -> SIGKILL.
 * Nothing else is handled, so SIGTERM kills it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(void) {
    fputs("usage: hog [-T] [-g RATE] MB [SECONDS] [-- CHILD ARGS...]...\n", stderr);
    exit(2);
}

int main(int argc, char **argv) {
    int i = 1;
    int ignore_term = 0;
    char *end;

    double rate = 0.0;  /* MiB a second; 0: all at once */
    for (;;) {
        if (i < argc && strcmp(argv[i], "-T") == 0) {
            ignore_term = 1;
            i++;
        } else if (i + 1 < argc && strcmp(argv[i], "-g") == 0) {
            rate = strtod(argv[i + 1], &end);
            if (*end != '\0' || rate <= 0)
                usage();
            i += 2;
        } else {
            break;
        }
    }
    if (i >= argc)
        usage();
    long mb = strtol(argv[i++], &end, 10);
    if (*end != '\0' || mb < 0)
        usage();
    double seconds = -1.0;
    if (i < argc && strcmp(argv[i], "--") != 0) {
        seconds = strtod(argv[i++], &end);
        if (*end != '\0' || seconds < 0)
            usage();
    }
    if (ignore_term)
        signal(SIGTERM, SIG_IGN);

    size_t size = (size_t)mb << 20;
    volatile char *mem = NULL;
    if (size) {
        mem = malloc(size);
        if (mem == NULL) {
            perror("hog: malloc");
            return 1;
        }
        long page = sysconf(_SC_PAGESIZE);
        /* with -g, a tick's worth of pages every 20 ms */
        size_t tick = rate > 0 ? (size_t)(rate * 1048576.0 / 50.0) : size;
        struct timespec pause_ts = {0, 20 * 1000 * 1000};
        for (size_t done = 0; done < size; done += tick) {
            size_t stop = done + tick < size ? done + tick : size;
            for (size_t off = done; off < stop; off += (size_t)page)
                mem[off] = (char)(off >> 12 | 1);
            if (rate > 0 && stop < size)
                nanosleep(&pause_ts, NULL);
        }
    }

    int children = 0;
    while (i < argc) {
        if (strcmp(argv[i], "--") != 0)
            usage();
        int first = ++i;
        while (i < argc && strcmp(argv[i], "--") != 0)
            i++;
        if (i == first)
            usage();
        char **child_argv = calloc((size_t)(i - first + 1), sizeof(char *));
        if (child_argv == NULL)
            return 1;
        memcpy(child_argv, argv + first, (size_t)(i - first) * sizeof(char *));
        pid_t pid = fork();
        if (pid < 0) {
            perror("hog: fork");
            return 1;
        }
        if (pid == 0) {
            signal(SIGTERM, SIG_DFL);
            execv(child_argv[0], child_argv);
            perror("hog: execv");
            _exit(127);
        }
        free(child_argv);
        children++;
    }

    if (children) {
        while (wait(NULL) > 0 || errno == EINTR)
            ;
        return 0;
    }
    if (seconds < 0) {
        for (;;)
            pause();
    }
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return mem != NULL && mem[0] == 0;
}
