"""DLPack's C ABI in ctypes, for calling producers and exchange tables as C code does: the
structs of `dlpack.h` 1.3, the exchange table's entries (called with the GIL held, as
`PYFUNCTYPE`: an exception an entry leaves set is raised in the caller) and capsule helpers.
"""

import ctypes

c_int, c_void_p, c_int32, c_uint32 = ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("major", c_uint32),
    ("minor", c_uint32),
    ("manager_ctx", c_void_p),
    ("deleter", DELETER),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


class Header(ctypes.Structure):
    pass


Header._fields_ = [("major", c_uint32), ("minor", c_uint32), ("prev_api", ctypes.POINTER(Header))]

# The entries, called as C calls them: with the GIL held (PYFUNCTYPE), and a Python exception
# raised here if the entry left one set.
SET_ERROR = ctypes.CFUNCTYPE(None, c_void_p, ctypes.c_char_p, ctypes.c_char_p)
ALLOCATOR = ctypes.PYFUNCTYPE(c_int, ctypes.POINTER(DLTensor), ctypes.POINTER(c_void_p), c_void_p, SET_ERROR)
FROM_PY = ctypes.PYFUNCTYPE(c_int, c_void_p, ctypes.POINTER(c_void_p))
TO_PY = ctypes.PYFUNCTYPE(c_int, c_void_p, ctypes.POINTER(c_void_p))
DLTENSOR_FROM_PY = ctypes.PYFUNCTYPE(c_int, c_void_p, ctypes.POINTER(DLTensor))
WORK_STREAM = ctypes.PYFUNCTYPE(c_int, c_int32, c_int32, ctypes.POINTER(c_void_p))


class ExchangeAPI(ctypes.Structure):
    _fields_ = [
        ("header", Header),
        ("managed_tensor_allocator", ALLOCATOR),
        ("managed_tensor_from_py_object_no_sync", FROM_PY),
        ("managed_tensor_to_py_object_no_sync", TO_PY),
        ("dltensor_from_py_object_no_sync", DLTENSOR_FROM_PY),
        ("current_work_stream", WORK_STREAM),
    ]


capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = c_void_p
capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
capsule_set_name.restype = c_int
capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]


def release(address):
    """Calls the deleter of the versioned managed tensor at `address`."""
    tensor = DLManagedTensorVersioned.from_address(address)
    tensor.deleter(ctypes.cast(address, ctypes.POINTER(DLManagedTensorVersioned)))


def take_object(address):
    """The object behind a new reference handed out as an address, taking the reference."""
    obj = ctypes.cast(address, ctypes.py_object).value
    ctypes.pythonapi.Py_DecRef(ctypes.py_object(obj))
    return obj


def numpy_managed(array):
    """A versioned managed tensor from numpy, owned by the caller (its capsule renamed used)."""
    capsule = array.__dlpack__(max_version=(1, 0))
    address = capsule_pointer(capsule, b"dltensor_versioned")
    assert capsule_set_name(capsule, b"used_dltensor_versioned") == 0
    return address


def table_of(cls):
    """The exchange table a class publishes as `__dlpack_c_exchange_api__`."""
    address = capsule_pointer(cls.__dlpack_c_exchange_api__, b"dlpack_exchange_api")
    return ExchangeAPI.from_address(address)
