"""The cancellation signal's exception, shared by the worker loop and its jobs."""


class Cancelled(BaseException):
    """Raised in the job's thread when the parent cancels it. Not an Exception on purpose:
    user code's ``except Exception`` must not swallow it."""
