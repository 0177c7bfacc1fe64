/* hog: a fake build tool with real memory use, for rigops tests.
 *
 *   hog [-T] MB [SECONDS] [-- CHILD ARGS... [-- CHILD ARGS...]...]
 *
 * Allocates MB MiB and touches every page (so the RSS is real), starts each CHILD (a path, exec'd as is,
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
    fputs("usage: hog [-T] MB [SECONDS] [-- CHILD ARGS...]...\n", stderr);
    exit(2);
}

int main(int argc, char **argv) {
    int i = 1;
    int ignore_term = 0;
    char *end;

    if (i < argc && strcmp(argv[i], "-T") == 0) {
        ignore_term = 1;
        i++;
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
        for (size_t off = 0; off < size; off += (size_t)page)
            mem[off] = (char)(off >> 12 | 1);
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
