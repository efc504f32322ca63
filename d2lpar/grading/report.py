"""What a check found: a report a student can print and act on."""

import dataclasses
import html
import traceback

import numpy as onp

from .mistakes import hint


@dataclasses.dataclass
class Failure:
    """One failing case.

    Attributes
    ----------
    mistake : str
        A code from :data:`d2lpar.grading.mistakes.MISTAKES`.
    case : str
        The case, in words (``'k=3 devices, 2 float64 elements'``).
    message : str
        Expected vs got.
    traceback : str or None
        The student's traceback when ``mistake == 'raised'``.
    framework : str
        ``'mxnet'`` or ``'torch'``: the hint is in that framework's terms.
    """

    mistake: str
    case: str
    message: str
    traceback: str = None
    framework: str = 'mxnet'

    @property
    def hint(self):
        """What usually causes this mistake."""
        return hint(self.mistake, self.framework)

    def to_dict(self):
        """Plain data for ``--json``."""
        return {
            'mistake': self.mistake,
            'case': self.case,
            'message': self.message,
            'hint': self.hint,
            'traceback': self.traceback,
        }


class Report:
    """The result of one check: ``bool(report)`` is True when it passed.

    Attributes
    ----------
    check : str
        The check's name, e.g. ``'check_allreduce'``.
    function : str
        The name of the function checked.
    cases : int
        How many cases ran.
    failures : list of Failure
        One per failing case, in the order the cases ran.
    framework : str
        ``'mxnet'`` or ``'torch'``: the framework the function was run in.
    note : str or None
        What the check could not look at (shown under the headline).
    """

    def __init__(self, check, function, cases, failures, framework='mxnet'):
        self.check, self.function = check, function
        self.cases, self.failures = cases, list(failures)
        self.framework = framework
        self.note = None

    @property
    def passed(self):
        """True when every case passed."""
        return not self.failures

    def __bool__(self):
        return self.passed

    @property
    def mistakes(self):
        """The distinct mistake codes, in order of first appearance."""
        return list(dict.fromkeys(f.mistake for f in self.failures))

    def to_dict(self):
        """Plain data for ``python -m d2lpar check --json``."""
        return {
            'check': self.check,
            'function': self.function,
            'passed': self.passed,
            'cases': self.cases,
            'mistakes': self.mistakes,
            'failures': [f.to_dict() for f in self.failures],
            'framework': self.framework,
            'note': self.note,
        }

    def headline(self):
        """One line: passed, or how many cases failed."""
        if self.passed:
            return (
                f'{self.check}({self.function}): passed all {self.cases} cases'
            )
        return (
            f'{self.check}({self.function}): {len(self.failures)} of '
            f'{self.cases} cases failed; mistakes: '
            f'{", ".join(self.mistakes)}'
        )

    def __str__(self):
        lines = [self.headline()]
        if self.note:
            lines.append(f'note: {self.note}')
        if self.failures:
            f = self.failures[0]
            lines += [
                f'first failing case: {f.case}',
                f'mistake: {f.mistake}',
                f.message,
                f'hint: {f.hint}',
            ]
            if f.traceback:
                lines += ['your traceback:', f.traceback.rstrip()]
        return '\n'.join(lines)

    def __repr__(self):
        return f'<Report {self.headline()}>'

    def _repr_markdown_(self):
        top = f'**{self.headline()}**'
        if self.note:
            top += f'\n\nnote: {self.note}'
        if not self.failures:  # passed
            return top
        f = self.failures[0]
        text = (
            f'{top}\n\n- first failing case: {f.case}'
            f'\n- mistake: `{f.mistake}`\n- hint: {f.hint}\n\n'
            f'```\n{f.message}\n```\n'
        )
        if f.traceback:
            text += f'\nyour traceback:\n```\n{f.traceback.rstrip()}\n```\n'
        return text

    def _repr_html_(self):
        colour = 'green' if self.passed else 'darkred'
        out = [
            f'<p style="color:{colour}"><b>'
            f'{html.escape(self.headline())}</b></p>'
        ]
        if self.note:
            out.append(f'<p>note: {html.escape(self.note)}</p>')
        if self.failures:
            f = self.failures[0]
            out.append(
                f'<ul><li>first failing case: {html.escape(f.case)}'
                f'</li><li>mistake: <code>{f.mistake}</code></li>'
                f'<li>hint: {html.escape(f.hint)}</li></ul>'
                f'<pre>{html.escape(f.message)}</pre>'
            )
            if f.traceback:
                out.append(
                    '<p>your traceback:</p><pre>'
                    f'{html.escape(f.traceback.rstrip())}</pre>'
                )
        return ''.join(out)


def run_cases(check, fn, cases, one_case, framework='mxnet'):
    """Run ``one_case(fn, case)`` on every case; collect the failures.

    ``one_case`` returns None when the case passed, or a
    ``(mistake, message)`` pair. An exception raised inside the
    student's function becomes a ``raised`` failure with its traceback
    (``one_case`` calls the student through :func:`call`). The hints
    are in ``framework``'s terms (``'mxnet'`` or ``'torch'``).
    """
    failures = []
    for case in cases:
        try:
            found = one_case(fn, case)
        except StudentError as e:
            name = type(e.error).__name__
            text = (
                f'{name}: {e.error}'
                if str(e.error)
                else f'{name} (is the function still the stub?)'
            )
            failures.append(
                Failure('raised', describe(case), text, e.text, framework)
            )
            continue
        if found is not None:
            failures.append(
                Failure(found[0], describe(case), found[1], None, framework)
            )
    return Report(
        check,
        getattr(fn, '__name__', repr(fn)),
        len(cases),
        failures,
        framework,
    )


class StudentError(Exception):
    """The student's function raised; carries its traceback text."""

    def __init__(self, error, text):
        super().__init__(str(error))
        self.error, self.text = error, text


def call(fn, *args, **kwargs):
    """Call the student's ``fn``, wrapping whatever it raises."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # the student's error, shown, never hidden
        tb = traceback.TracebackException.from_exception(e)
        # Drop this frame: the student's own frames are what matter.
        tb.stack = traceback.StackSummary.from_list(tb.stack[1:])
        raise StudentError(e, ''.join(tb.format())) from e


def describe(case):
    """A case in words: its ``'what'`` entry."""
    return case['what']


def show(a, digits=6):
    """A short text for an array (first elements only)."""
    a = onp.asarray(a).ravel()
    body = onp.array2string(a[:6], precision=digits, separator=', ')
    return body if a.size <= 6 else body[:-1] + f', ... ({a.size} values)]'
