"""One page, two frameworks: the cells of each run in their own namespace.

A chapter shows its code in MXNet and in PyTorch, d2l's way: a code cell
whose first line is ``#@tab pytorch`` is PyTorch's, one whose first line
is ``#@tab mxnet`` is MXNet's, and an unmarked cell is shared (neutral
code that runs in either). The book's build executes both frameworks'
cells in one kernel; a student's downloaded notebook holds one
framework's cells and the shared ones (scripts/chapter_notebook.py).

So that each framework's cells read as they will in the student's
notebook (``dp`` is ``d2lpar`` in one, ``d2lpar.torch`` in the other;
``params``, ``device`` are that framework's), :func:`framework_tabs`
gives the kernel two namespaces: before a ``#@tab pytorch`` cell runs,
IPython's user namespace is swapped for PyTorch's, and swapped back
after it. MXNet's cells and the shared ones run in the default (MXNet)
namespace; what a shared cell binds is copied into PyTorch's too, as a
shared cell in the student's PyTorch notebook would bind it there.
IPython's own names (``In``, ``Out``, ``_``, ``get_ipython``, ...) are
common to both.
"""

import re

FRAMEWORKS = ('mxnet', 'pytorch')
DEFAULT = 'mxnet'
MARKER = re.compile(r'\A\s*#@tab[ \t]+(\w+)[ \t]*$', re.M)


def cell_framework(source):
    """The framework a cell's ``#@tab NAME`` first line names, or None
    for a shared (unmarked) cell.

    Raises
    ------
    ValueError
        If the marker names a framework other than mxnet or pytorch.
    """
    first = source.lstrip('\n').split('\n', 1)[0]
    match = MARKER.match(first)
    if not match:
        return None
    name = match.group(1)
    if name not in FRAMEWORKS:
        raise ValueError(
            f'#@tab {name}: unknown framework; a cell is marked '
            f'#@tab mxnet or #@tab pytorch (or not at all, if shared)'
        )
    return name


class FrameworkTabs:
    """The two namespaces of one kernel (see the module's documentation).

    ``shell`` is the IPython shell; its ``user_ns`` always holds the
    namespace of the framework whose cell runs (MXNet's between cells),
    ``self.stashed`` the other one's private names.
    """

    def __init__(self, shell):
        self.shell = shell
        self.stashed = {}  # PyTorch's names while MXNet's are in user_ns
        self.current = DEFAULT
        self.before = None  # a shared cell's names before it ran

    def private(self, name):
        """Whether ``name`` belongs to one framework (not IPython's)."""
        return (
            not name.startswith('_') and name not in self.shell.user_ns_hidden
        )

    def swap(self):
        """Exchange the user namespace's private names with the stash."""
        ns = self.shell.user_ns
        mine = {k: v for k, v in ns.items() if self.private(k)}
        for name in mine:
            del ns[name]
        ns.update(self.stashed)
        self.stashed = mine
        self.current = 'pytorch' if self.current == 'mxnet' else 'mxnet'

    def pre_run_cell(self, info):
        framework = cell_framework(info.raw_cell or '')
        self.before = None
        if framework is None:
            ns = self.shell.user_ns
            self.before = {k: v for k, v in ns.items() if self.private(k)}
        elif framework != self.current:
            self.swap()

    def post_run_cell(self, result):
        if self.current != DEFAULT:
            self.swap()
        elif self.before is not None:  # a shared cell: PyTorch's too
            ns = self.shell.user_ns
            for name, value in ns.items():
                if self.private(name) and self.before.get(name) is not value:
                    self.stashed[name] = value
        self.before = None

    def unregister(self):
        """Stop swapping (back to one namespace, MXNet's)."""
        if self.current != DEFAULT:
            self.swap()
        events = self.shell.events
        events.unregister('pre_run_cell', self.pre_run_cell)
        events.unregister('post_run_cell', self.post_run_cell)
        if getattr(self.shell, '_d2lpar_tabs', None) is self:
            del self.shell._d2lpar_tabs


def framework_tabs(shell=None):
    """Give this IPython kernel one namespace per framework.

    Called by a two-framework page's hidden first cell; the cells after
    it run in their framework's namespace (``#@tab pytorch`` cells in
    PyTorch's). Calling it again in the same kernel changes nothing.

    Returns
    -------
    FrameworkTabs
        The registered hooks (``.unregister()`` removes them).
    """
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None:
            raise RuntimeError(
                'framework_tabs: not running in IPython; a two-framework '
                "page's cells need a Jupyter kernel"
            )
    existing = getattr(shell, '_d2lpar_tabs', None)
    if existing is not None:
        return existing
    tabs = FrameworkTabs(shell)
    shell.events.register('pre_run_cell', tabs.pre_run_cell)
    shell.events.register('post_run_cell', tabs.post_run_cell)
    shell._d2lpar_tabs = tabs
    return tabs
