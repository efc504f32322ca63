"""How a notebook the book serves says to install d2lpar.

The chapters' notebooks (``scripts/chapter_notebook.py``) and the
homework's (:mod:`d2lpar.grading.notebooks`) open with the same
sentences, made here: the pip command that installs the wheel the
book's site serves (``D2LPAR_SITE_URL``; without it, the wheel
downloaded from the install page), or the repository's source
(``D2LPAR_REPOSITORY_URL``), with a framework's extras. Text only:
nothing here runs pip.
"""

import importlib.metadata
import os

# An MXNet notebook's extras, and a PyTorch notebook's (no MXNet).
EXTRAS = 'cpu,notebook'
TORCH_EXTRAS = 'torch,notebook'
# The extras of each framework's notebook, by the book's framework names.
NOTEBOOK_EXTRAS = {'mxnet': EXTRAS, 'pytorch': TORCH_EXTRAS}
TORCH_NOTE = (
    ' PyTorch from PyPI is its CUDA build on Linux (several GB); without '
    'a GPU add `--extra-index-url https://download.pytorch.org/whl/cpu`.'
)
# d2l pins numpy 1.23.5, which has no wheel for Python 3.12 (Colab's).
D2L_NOTE = (
    ' The `d2l` extra needs Python 3.11 (d2l pins numpy 1.23.5, which has '
    'no wheel for Python 3.12); on Python 3.12, as on Colab, leave `d2l` '
    'out of the extras: only the cells that import d2l need it.'
)


def wheel_name(version):
    """The file name of d2lpar's wheel (scripts/build_dist.py builds it)."""
    return f'd2lpar-{version}-py3-none-any.whl'


def install_commands(version, site_url='', repo_url='', extras=EXTRAS):
    """The pip commands that install ``version`` from the book's site.

    With the site's address known (``site_url``) a command installs the
    wheel the site serves in ``dist/``; without it, the wheel downloaded
    from the site into the current folder. ``repo_url`` adds an install
    of the repository's newest source.
    """
    wheel = wheel_name(version)
    if site_url:
        url = f'{site_url.rstrip("/")}/dist/{wheel}'
        commands = [f'pip install "d2lpar[{extras}] @ {url}"']
    else:
        commands = [f'pip install "./{wheel}[{extras}]"']
    if repo_url:
        commands.append(f'pip install "d2lpar[{extras}] @ git+{repo_url}"')
    return commands


def install_note(version=None, site_url=None, repo_url=None, extras=EXTRAS):
    """The sentences of a notebook's header that say how to install
    d2lpar (``site_url`` and ``repo_url`` default to
    ``D2LPAR_SITE_URL`` and ``D2LPAR_REPOSITORY_URL``)."""
    version = version or importlib.metadata.version('d2lpar')
    if site_url is None:
        site_url = os.environ.get('D2LPAR_SITE_URL', '')
    if repo_url is None:
        repo_url = os.environ.get('D2LPAR_REPOSITORY_URL', '')
    commands = install_commands(version, site_url, repo_url, extras)
    if site_url:
        text = f'`{commands[0]}`'
    else:
        text = (
            f"download `{wheel_name(version)}` from the book's install "
            f"page (the site's `dist/` folder), then run `{commands[0]}` "
            f'in the folder that holds it'
        )
    if repo_url:
        text += f'; or, from the repository, `{commands[1]}`'
    text += '.'
    if 'torch' in extras.split(','):
        text += TORCH_NOTE
    if 'd2l' in extras.split(','):
        text += D2L_NOTE
    return text + ' On Colab, Windows or a Mac, read the install page first.'
