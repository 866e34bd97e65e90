/*
 * The pod sandbox's first process (kyb.local/pause): it holds the pod's namespaces
 * open, sleeps until told to stop, reaps the zombies of processes re-parented to it
 * (it is PID 1 of the pod when the pod shares its process namespace), and exits 0 on
 * SIGINT or SIGTERM.
 *
 * Built static and stripped: gcc -static -Os -s -o pause pause.c
 */
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes a message with write(2) alone: no stdio buffers to flush before _exit. */
static void say(int fd, const char *message) {
    (void)!write(fd, message, strlen(message));
}

static void stop(int signo) {
    (void)signo;
    _exit(0);
}

static void reap(int signo) {
    (void)signo;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        say(1, "kyb pause 1.0\n");
        return 0;
    }
    if (getpid() != 1) {
        say(2, "pause: warning: not running as PID 1\n");
    }

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = stop;
    if (sigaction(SIGINT, &action, NULL) < 0 || sigaction(SIGTERM, &action, NULL) < 0) {
        say(2, "pause: sigaction failed\n");
        return 1;
    }
    action.sa_handler = reap;
    action.sa_flags = SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &action, NULL) < 0) {
        say(2, "pause: sigaction failed\n");
        return 1;
    }

    for (;;) {
        pause();
    }
    return 42; /* not reached */
}
