"""placeholder"""


def function_hashes(): ...


class Reconciler: ...
