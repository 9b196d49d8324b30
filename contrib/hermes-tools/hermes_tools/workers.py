"""Long-lived worker threads for tool calls, and the limit on calls running at once.

Hermes runs async tool handlers on a per-thread event loop that it keeps for the thread's
life, and its cached HTTP clients stay bound to that loop: a thread per call would leave
them bound to dead loops. So calls run on threads that outlive them. A worker stuck in a
hung call stays stuck (Python cannot kill a thread) and keeps its place, so hung calls
cannot grow the number of threads past the limit.
"""

import queue
import threading
from typing import Callable

Job = Callable[[Callable[[], None]], None]


class Workers:
    def __init__(self, limit: int, name: str = "tool-worker"):
        self.limit = limit
        self.name = name
        self.jobs: "queue.SimpleQueue[Job]" = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.running = 0  # jobs that have not called free(); threads == running + idle
        self.idle = 0
        self.threads = 0

    def try_submit(self, job: Job) -> bool:
        """Run job(free) on an idle worker or a new one; False when limit jobs are running.
        job calls free() once its result is known, before answering, so the client's next
        call finds the place free."""
        with self.lock:
            if self.running >= self.limit:
                return False
            self.running += 1
            if self.idle > 0:
                self.idle -= 1
            else:
                self.threads += 1
                threading.Thread(target=self._loop, daemon=True,
                                 name=f"{self.name}-{self.threads}").start()
        self.jobs.put(job)
        return True

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            freed = []

            def free():
                with self.lock:
                    if not freed:
                        freed.append(True)
                        self.running -= 1
                        self.idle += 1
            try:
                job(free)
            except BaseException:  # a job handles its own errors; the worker must survive
                pass
            free()
