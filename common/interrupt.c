#include "common/interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t polling;

static void say(const char *msg, size_t len)
{
    ssize_t ignored = write(STDERR_FILENO, msg, len);
    (void)ignored;
}

static void on_signal(int sig)
{
    if (polling && !stop_requested) {
        stop_requested = 1;
        static const char msg[] = "\nflashbed: interrupted; finishing up and keeping measured results "
                                  "(press again to abort)\n";
        say(msg, sizeof msg - 1);
        return;
    }
    stop_requested = 1;
    cleanup_remove_all();
    static const char msg[] = "\nflashbed: interrupted; unfinished output removed\n";
    say(msg, sizeof msg - 1);
    _exit(128 + sig);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* one handler at a time: a SIGTERM during a SIGINT's cleanup waits */
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void interrupt_exit_on_signal(void)
{
    polling = 0;
    install();
}

void interrupt_install(void)
{
    polling = 1;
    install();
}

bool interrupted(void)
{
    return stop_requested != 0;
}
