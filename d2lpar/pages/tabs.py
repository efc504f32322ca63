"""One page, two frameworks: the cells of each run in their own namespace.

A chapter shows its code in MXNet and in PyTorch, d2l's way: a code cell
whose first line is ``#@tab pytorch`` is PyTorch's, one whose first line
is ``#@tab mxnet`` is MXNet's, and an unmarked cell is shared (neutral
code that runs in either). The book's build executes both frameworks'
cells in one kernel; a student's downloaded notebook holds one
framework's cells and the shared ones (:func:`keep_framework`, which
scripts/chapter_notebook.py and the homework's generator,
:mod:`d2lpar.grading.notebooks`, both use).

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

import copy
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


def framework_of(cell):
    """The framework a notebook cell belongs to, or None for a shared cell.

    A code cell's is named by its ``#@tab NAME`` first line and its
    ``tab-NAME`` tag (the web page's switcher hides by the tag), which
    must agree; a markdown cell's by its tag.

    Raises
    ------
    ValueError
        If a code cell's marker and tag disagree (or one is missing), a
        cell carries two frameworks' tags, or a tag or marker names
        another framework.
    """
    tags = [
        t[len('tab-') :]
        for t in cell.metadata.get('tags', [])
        if t.startswith('tab-')
    ]
    for tag in tags:
        if tag not in FRAMEWORKS:
            raise ValueError(
                f'tag tab-{tag}: unknown framework; tag a cell tab-mxnet '
                f'or tab-pytorch (or not at all, if shared)'
            )
    if len(tags) > 1:
        raise ValueError(f'a cell tagged {tags}: one framework per cell')
    tag = tags[0] if tags else None
    if cell.cell_type == 'code':
        marker = cell_framework(cell.source)
        if marker != tag:
            first = cell.source.lstrip('\n').split('\n', 1)[0]
            raise ValueError(
                f'a code cell starting {first!r} is marked #@tab {marker} '
                f"but tagged tab-{tag}; give a framework's cell both "
                f"(the book's convention), a shared cell neither"
            )
    return tag


def keep_framework(cells, framework):
    """The cells of ``framework``'s notebook: the shared cells and
    ``framework``'s, in order, without their ``#@tab`` line (nor the
    blank lines after it) and ``tab-`` tag.

    Parameters
    ----------
    cells : list of nbformat.NotebookNode
        A two-framework notebook's cells (left unchanged).
    framework : {'mxnet', 'pytorch'}

    Returns
    -------
    list of nbformat.NotebookNode
        Copies of the kept cells; a shared cell's copy is unchanged.

    Raises
    ------
    ValueError
        For a framework other than mxnet or pytorch, and for the cells
        :func:`framework_of` refuses.
    """
    if framework not in FRAMEWORKS:
        raise ValueError(
            f'keep_framework: {framework!r} is not one of {FRAMEWORKS}'
        )
    kept = []
    for cell in cells:
        tab = framework_of(cell)
        if tab not in (None, framework):
            continue
        cell = copy.deepcopy(cell)
        if tab:
            if cell.cell_type == 'code':
                source = MARKER.sub('', cell.source.lstrip('\n'), 1)
                cell.source = source.lstrip('\n')
            tags = [
                t
                for t in cell.metadata.get('tags', [])
                if not t.startswith('tab-')
            ]
            if tags:
                cell.metadata['tags'] = tags
            else:
                cell.metadata.pop('tags', None)
        kept.append(cell)
    return kept


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
