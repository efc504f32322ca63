"""Helpers for the book's pages: build settings and glued text.

``D2LPAR_QUICK=1`` makes every chapter train briefly on a slice of the
data so a whole build takes minutes; the pages then say so.
"""
import dataclasses
import os

QUICK_VAR = 'D2LPAR_QUICK'


@dataclasses.dataclass(frozen=True)
class BookSettings:
    """Training sizes a chapter should use.

    Attributes
    ----------
    quick : bool
        Built with ``D2LPAR_QUICK=1``.
    num_epochs : int
        Epochs of the main training runs.
    num_train : int or None
        Training examples used (None: all 60,000).
    """

    quick: bool
    num_epochs: int
    num_train: object

    def describe(self):
        """A sentence for the page saying how it was built."""
        if not self.quick:
            return (f'This page was built with the full settings: '
                    f'{self.num_epochs} epochs on all 60,000 training '
                    f'images.')
        return (f'This page was built in quick mode ({QUICK_VAR}=1): '
                f'{self.num_epochs} epochs on the first {self.num_train:,} '
                f'training images, so its numbers are rougher than a '
                f'full build\'s.')


def book_settings():
    """Read ``D2LPAR_QUICK`` and return the chapter's training sizes.

    Returns
    -------
    BookSettings
        10 epochs on all data, or 2 epochs on 6,000 images when
        ``D2LPAR_QUICK`` is set to anything but ``''`` or ``'0'``.
    """
    quick = os.environ.get(QUICK_VAR, '') not in ('', '0')
    if quick:
        return BookSettings(True, 2, 6000)
    return BookSettings(False, 10, None)


def glue_text(name, text):
    """Glue ``text`` so the prose can show it with ``{glue:md}`name```.

    Every number in the book's prose is computed when the page is built
    and inserted this way, never typed. Gluing a Markdown object (not a
    plain ``str``) keeps the quotes of ``repr`` off the page.

    Parameters
    ----------
    name : str
        The key the prose refers to.
    text : object
        Shown as Markdown after ``str()``; format numbers first.

    Returns
    -------
    str
        The text glued, for printing or checks.
    """
    from IPython.display import Markdown
    from myst_nb import glue
    glue(name, Markdown(str(text)), display=False)
    return str(text)
