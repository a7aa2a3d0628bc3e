"""Arrays lent to a one-state kernel: numba's entry point, checked and without bookkeeping.

numba's compiled entry point (what its dispatcher calls once it has typed the arguments)
converts a numpy array by allocating a reference-counted record for it (an NRT meminfo,
freed after the call): ~45 ns an array, a quarter of newton_euler's one-state inverse
dynamics.  And it trusts the caller for the array's dtype and dimensions: a vector of
another dimension would overrun the converted struct.  So a caller either paid the
dispatcher's typing or checked dtype and dimensions in Python, ~0.15 µs for three vectors.

The numba types here, :data:`VECTOR` and :data:`MATRIX` (float64, 1 and 2 dimensions,
C-contiguous), are converted instead by reading the array's fields (NumPy's public C
struct ``PyArrayObject_fields``, numpy/ndarraytypes.h) after checking, in the entry point
itself, that the argument is

* a ``numpy.ndarray`` (exactly: a subclass may override anything),
* of dtype float64 in the machine's byte order (type number NPY_DOUBLE, byte order '='),
* with the declared number of dimensions, C-contiguous;

anything else raises TypeError (message :data:`REFUSED`), and the caller takes its
validating path.  Nothing is allocated: the array is borrowed for the duration of the call,
during which the caller's argument tuple holds it (the kernels keep no reference and keep
the GIL).  Inside the kernel these are ordinary numba arrays (an NRT record of NULL is one
numba's own ``carray`` makes).

The one address the check compares against, numpy's ndarray type, is resolved when the
machine code is loaded (an llvmlite symbol), so the code is cached like any other (and,
this file being one of :data:`.cache.SOURCES`, compiled anew when it changes).  The field
offsets are verified on live arrays at import; should they ever differ (another NumPy or
CPython ABI), :data:`VECTOR` and :data:`MATRIX` are numba's own array types and
:func:`entry_of` returns the dispatcher, which types its arguments itself: slower, never
unchecked.
"""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.imputils import lower_cast
from numba.extending import NativeValue, models, register_model, unbox

REFUSED = "a one-state kernel takes numpy float64 arrays, C-contiguous, of its declared dimensions"

_HEAD = object.__basicsize__                   # PyObject_HEAD: reference count and type
# PyArrayObject_fields after the head: data, nd, dimensions, strides, base, descr, flags
_DATA, _ND, _DIMS, _STRIDES, _DESCR, _FLAGS = (_HEAD + 8 * k for k in (0, 1, 2, 3, 5, 6))
# PyArray_Descr after the head: typeobj, kind, type, byteorder, flags, type_num
_BYTEORDER, _TYPE_NUM = _HEAD + 10, _HEAD + 12
_NPY_DOUBLE, _NATIVE, _C_CONTIGUOUS = 12, ord("="), 0x1
_NDARRAY_SYMBOL = "dyn_plugin_borrowed_ndarray_type"


def _read(obj, offset: int, ctype):
    return ctype.from_address(id(obj) + offset).value


def _fields_as_expected() -> bool:
    """The offsets above read the right fields of live arrays and dtypes (this NumPy, this
    CPython)."""
    try:
        a = np.arange(12.0).reshape(3, 4)[:, ::2]
        dims = ctypes.cast(_read(a, _DIMS, ctypes.c_void_p), ctypes.POINTER(ctypes.c_ssize_t))
        strides = ctypes.cast(_read(a, _STRIDES, ctypes.c_void_p), ctypes.POINTER(ctypes.c_ssize_t))
        native, swapped = np.dtype(np.float64), np.dtype(np.float64).newbyteorder()
        return (np.ndarray.__basicsize__ >= _FLAGS + 4
                and _read(a, _DATA, ctypes.c_void_p) == a.ctypes.data
                and _read(a, _ND, ctypes.c_int) == 2
                and (dims[0], dims[1], strides[0], strides[1]) == (*a.shape, *a.strides)
                and _read(a, _DESCR, ctypes.c_void_p) == id(a.dtype)
                and _read(a, _FLAGS, ctypes.c_int) & _C_CONTIGUOUS == 0
                and _read(np.zeros(2), _FLAGS, ctypes.c_int) & _C_CONTIGUOUS != 0
                and _read(native, _TYPE_NUM, ctypes.c_int) == _NPY_DOUBLE == np.float64(0).dtype.num
                and _read(np.dtype(np.float32), _TYPE_NUM, ctypes.c_int) == np.dtype(np.float32).num
                and _read(native, _BYTEORDER, ctypes.c_char) == b"="
                and _read(swapped, _BYTEORDER, ctypes.c_char) in (b"<", b">"))
    except Exception:                  # noqa: BLE001 - any surprise means: do not borrow
        return False


AVAILABLE = _fields_as_expected()


class Borrowed(types.Array):
    """A C-contiguous float64 array of ``ndim`` dimensions, converted by borrowing."""

    def __init__(self, ndim: int):
        super().__init__(types.float64, ndim, "C", name=f"borrowed(float64, {ndim}d, C)")


register_model(Borrowed)(models.ArrayModel)


@lower_cast(Borrowed, types.Array)
@lower_cast(types.Array, Borrowed)
def _same_struct(context, builder, fromty, toty, value):
    """Between a borrowed and a numba array of the same dtype and dimensions: the same struct."""
    return value


def _external(module, name: str):
    """The address of the process symbol ``name`` (llvm.add_symbol), as an i8*."""
    try:
        return module.get_global(name)
    except KeyError:
        variable = ir.GlobalVariable(module, ir.IntType(8), name)
        variable.linkage = "external"
        return variable


@unbox(Borrowed)
def _unbox_borrowed(typ, obj, c):
    builder, i32, i8p = c.builder, ir.IntType(32), ir.IntType(8).as_pointer()
    intp = c.context.get_value_type(types.intp)

    def field(base, offset, ty):
        address = builder.gep(builder.bitcast(base, i8p), [ir.Constant(ir.IntType(64), offset)])
        return builder.load(builder.bitcast(address, ty.as_pointer()))

    def equal(value, constant):
        return builder.icmp_unsigned("==", value, ir.Constant(value.type, constant))

    array = c.context.make_array(typ)(c.context, builder)
    converted = cgutils.alloca_once_value(builder, cgutils.false_bit)
    is_ndarray = builder.icmp_unsigned("==", builder.bitcast(c.pyapi.get_type(obj), i8p),
                                       _external(builder.module, _NDARRAY_SYMBOL))
    with builder.if_then(is_ndarray, likely=True):
        descr = field(obj, _DESCR, i8p)
        accepted = builder.and_(builder.and_(equal(field(descr, _TYPE_NUM, i32), _NPY_DOUBLE),
                                             equal(field(descr, _BYTEORDER, ir.IntType(8)), _NATIVE)),
                                builder.and_(equal(field(obj, _ND, i32), typ.ndim),
                                             builder.not_(equal(builder.and_(field(obj, _FLAGS, i32),
                                                                             ir.Constant(i32, _C_CONTIGUOUS)), 0))))
        with builder.if_then(accepted, likely=True):
            dims, strides = field(obj, _DIMS, intp.as_pointer()), field(obj, _STRIDES, intp.as_pointer())
            c.context.populate_array(
                array, data=builder.bitcast(field(obj, _DATA, i8p), array.data.type),
                shape=cgutils.pack_array(builder, [builder.load(cgutils.gep(builder, dims, k)) for k in range(typ.ndim)]),
                strides=cgutils.pack_array(builder, [builder.load(cgutils.gep(builder, strides, k))
                                                     for k in range(typ.ndim)]),
                itemsize=c.context.get_constant(types.intp, 8), meminfo=None, parent=obj)
            builder.store(cgutils.true_bit, converted)
    refused = builder.not_(builder.load(converted))
    with builder.if_then(refused, likely=False):
        c.pyapi.err_set_string("PyExc_TypeError", REFUSED)
    return NativeValue(array._getvalue(), is_error=refused)


if AVAILABLE:
    llvm.add_symbol(_NDARRAY_SYMBOL, id(np.ndarray))
    VECTOR, MATRIX = Borrowed(1), Borrowed(2)
else:
    VECTOR, MATRIX = nb.float64[::1], nb.float64[:, ::1]


def entry_of(kernel):
    """The compiled entry point of ``kernel``, a numba dispatcher compiled for exactly one
    signature whose array arguments are all :data:`VECTOR` or :data:`MATRIX`: a call with
    anything but such arrays raises TypeError.  The dispatcher itself otherwise: when the
    arrays cannot be borrowed (see the module docstring), for a signature with another array
    type (its entry point would trust the caller), or should numba's internals change."""
    try:
        (compiled,) = kernel.overloads.values()
        arguments = compiled.signature.args
    except (AttributeError, ValueError):
        return kernel
    borrowed = all(isinstance(a, Borrowed) for a in arguments if isinstance(a, types.Buffer))
    return compiled.entry_point if AVAILABLE and borrowed else kernel
