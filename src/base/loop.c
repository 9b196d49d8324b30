/* loop.c — epoll reactor with a binary-heap timer queue.
 *
 * Removal during dispatch: epoll may already have returned an event for a watch that an earlier
 * callback in the same batch removed, so removed watches are only marked dead and freed after the
 * batch. Timers live in a heap indexed by their position so cancel is O(log n). */
#include "loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "mem.h"

struct loop_watch {
    struct loop *loop;
    int fd;
    bool dead;
    loop_fd_cb *cb;
    void *arg;
    struct loop_watch *next_dead;
};

struct loop_timer {
    struct loop *loop;
    uint64_t due;
    uint64_t seq; /* ties broken by insertion order */
    size_t index;
    loop_timer_cb *cb;
    void *arg;
};

struct loop {
    int epfd;
    int wakefd;
    bool stop;
    uint64_t now;
    uint64_t seq;
    struct loop_timer **heap;
    size_t nheap, capheap;
    struct loop_watch *dead;
    struct loop_watch wake_watch;
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void wake_drain(struct loop *l, int fd, uint32_t events, void *arg)
{
    uint64_t v;
    (void)l, (void)events, (void)arg;
    while (read(fd, &v, sizeof v) > 0)
        ;
}

struct loop *loop_new(void)
{
    struct loop *l = xcalloc(1, sizeof *l);
    struct epoll_event ev = {.events = EPOLLIN};

    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->epfd < 0 || l->wakefd < 0)
        goto fail;
    l->wake_watch = (struct loop_watch){.loop = l, .fd = l->wakefd, .cb = wake_drain};
    ev.data.ptr = &l->wake_watch;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0)
        goto fail;
    l->now = mono_ms();
    return l;
fail:
    loop_free(l);
    return NULL;
}

static void free_dead(struct loop *l)
{
    while (l->dead) {
        struct loop_watch *w = l->dead;
        l->dead = w->next_dead;
        free(w);
    }
}

void loop_free(struct loop *l)
{
    if (l == NULL)
        return;
    free_dead(l);
    for (size_t i = 0; i < l->nheap; i++)
        free(l->heap[i]);
    free(l->heap);
    if (l->wakefd >= 0)
        close(l->wakefd);
    if (l->epfd >= 0)
        close(l->epfd);
    free(l);
}

struct loop_watch *loop_watch_add(struct loop *l, int fd, uint32_t events, loop_fd_cb *cb,
                                  void *arg)
{
    struct loop_watch *w = xcalloc(1, sizeof *w);
    struct epoll_event ev = {.events = events, .data.ptr = w};

    *w = (struct loop_watch){.loop = l, .fd = fd, .cb = cb, .arg = arg};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        free(w);
        return NULL;
    }
    return w;
}

int loop_watch_mod(struct loop_watch *w, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};
    return epoll_ctl(w->loop->epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

void loop_watch_del(struct loop_watch *w)
{
    if (w == NULL)
        return;
    /* The fd may already be closed by its owner; ENOENT/EBADF are fine then. */
    epoll_ctl(w->loop->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    w->dead = true;
    w->next_dead = w->loop->dead;
    w->loop->dead = w;
}

static bool timer_before(const struct loop_timer *a, const struct loop_timer *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_set(struct loop *l, size_t i, struct loop_timer *t)
{
    l->heap[i] = t;
    t->index = i;
}

static void heap_up(struct loop *l, size_t i)
{
    struct loop_timer *t = l->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_before(t, l->heap[parent]))
            break;
        heap_set(l, i, l->heap[parent]);
        i = parent;
    }
    heap_set(l, i, t);
}

static void heap_down(struct loop *l, size_t i)
{
    struct loop_timer *t = l->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= l->nheap)
            break;
        if (c + 1 < l->nheap && timer_before(l->heap[c + 1], l->heap[c]))
            c++;
        if (!timer_before(l->heap[c], t))
            break;
        heap_set(l, i, l->heap[c]);
        i = c;
    }
    heap_set(l, i, t);
}

static void heap_remove(struct loop *l, struct loop_timer *t)
{
    size_t i = t->index;
    struct loop_timer *last = l->heap[--l->nheap];
    if (last == t)
        return;
    heap_set(l, i, last);
    heap_up(l, i);
    heap_down(l, last->index);
}

struct loop_timer *loop_timer_add(struct loop *l, uint64_t ms, loop_timer_cb *cb, void *arg)
{
    struct loop_timer *t = xcalloc(1, sizeof *t);

    *t = (struct loop_timer){
        .loop = l, .due = mono_ms() + ms, .seq = l->seq++, .cb = cb, .arg = arg};
    if (l->nheap == l->capheap) {
        l->capheap = l->capheap ? 2 * l->capheap : 64;
        l->heap = xrealloc(l->heap, l->capheap * sizeof *l->heap);
    }
    l->heap[l->nheap] = t;
    t->index = l->nheap++;
    heap_up(l, t->index);
    return t;
}

void loop_timer_cancel(struct loop_timer *t)
{
    if (t == NULL)
        return;
    heap_remove(t->loop, t);
    free(t);
}

uint64_t loop_now(struct loop *l)
{
    return l->now;
}

static void run_timers(struct loop *l)
{
    l->now = mono_ms();
    while (l->nheap > 0 && l->heap[0]->due <= l->now) {
        struct loop_timer *t = l->heap[0];
        heap_remove(l, t);
        loop_timer_cb *cb = t->cb;
        void *arg = t->arg;
        free(t);
        cb(l, arg);
    }
}

int loop_once(struct loop *l, int max_wait_ms)
{
    struct epoll_event evs[64];
    int timeout = max_wait_ms;

    if (l->nheap > 0) {
        uint64_t now = mono_ms();
        uint64_t due = l->heap[0]->due;
        int t = due <= now ? 0 : (due - now > 60000 ? 60000 : (int)(due - now));
        if (timeout < 0 || t < timeout)
            timeout = t;
    }
    int n = epoll_wait(l->epfd, evs, 64, timeout);
    if (n < 0) {
        if (errno == EINTR)
            return 0;
        return -1;
    }
    l->now = mono_ms();
    for (int i = 0; i < n; i++) {
        struct loop_watch *w = evs[i].data.ptr;
        if (!w->dead)
            w->cb(l, w->fd, evs[i].events, w->arg);
    }
    free_dead(l);
    run_timers(l);
    free_dead(l);
    return 0;
}

int loop_run(struct loop *l)
{
    l->stop = false;
    while (!l->stop)
        if (loop_once(l, -1) < 0)
            return -1;
    return 0;
}

bool loop_stopping(const struct loop *l)
{
    return l->stop;
}

void loop_stop(struct loop *l)
{
    l->stop = true;
    loop_wake(l);
}

void loop_wake(struct loop *l)
{
    uint64_t one = 1;
    ssize_t r = write(l->wakefd, &one, sizeof one);
    (void)r; /* a full counter already means "wake up" */
}
