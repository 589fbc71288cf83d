// Builtin entry points that run the whole call in C++ (see entry.h).
#include "entry.h"

#include <mpi4py/mpi4py.h>
#include <structmember.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arguments.h"
#include "bufspec.h"
#include "shancoll/comm.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/ops.h"

namespace py = pybind11;

namespace shancoll::bindings {
namespace {

constexpr std::size_t kMaxParams = 16;

// One argument of a kept call (KeptCall) and how a repeat must match it.
struct KeptArg {
  py::object object;  // the same object again (held: its address cannot come back); null: an array
  ArrayState array;   // an array's: one in the same state again (the address aside)
  py::object descr;   // the array's dtype, held (compared by address)
  int buffer = -1;    // the index of its address in PreparedCall::run's buffers; -1: no array
  // An mpi4py Comm's or Op's handle, where it lives in the object and its
  // value: the same again (Free() sets it to the null handle).
  const MPI_Comm* comm = nullptr;
  MPI_Comm comm_value = MPI_COMM_NULL;
  const MPI_Op* op = nullptr;
  MPI_Op op_value = MPI_OP_NULL;

  // Whether `given` matches; an array's address then goes into `buffers`.
  bool matches(PyObject* given, std::byte** buffers) const {
    if (object) {
      if (given != object.ptr() || (comm && *comm != comm_value) || (op && *op != op_value))
        return false;
      if (buffer >= 0) buffers[buffer] = nullptr;
      return true;
    }
    ArrayState now;
    if (!array_state(given, now) || !now.same_message(array)) return false;
    buffers[buffer] = now.data;
    return true;
  }
};

// Whether a call's keyword names are `kept`'s: the same tuple (a call
// site's constant) or, as a call with **kwargs builds one every call, the
// same names (interned by the compiler: compared by address).
bool same_names(PyObject* names, PyObject* kept) {
  if (names == kept) return true;
  if (!names || !kept || PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(kept)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i)
    if (PyTuple_GET_ITEM(names, i) != PyTuple_GET_ITEM(kept, i)) return false;
  return true;
}

// The last call of an entry with EntrySpec::prepare, kept prepared: a call
// with the same arguments (the same count by position and keyword names;
// each argument matched as KeptArg says) and the
// same selection generation (the options start from the defaults, which
// reload_environment changes) runs it again. Every argument the intake
// reads is compared, so the intake would take it the same.
//
// What it holds outlives nothing it refers to: the arguments' objects are
// held; its MPI handles are the communicator's (below) and predefined ops
// only (can_keep: a user op may be freed while kept, and its handle come
// back as another op); it holds no datatype (only exact ndarrays are kept,
// never a [buf, datatype] spec). Its communicator's handle may still be
// freed behind the Comm object held (by another mpi4py object of the same
// handle, or by C) and come back as another communicator: so a kept call
// is stale once any communicator's shancoll state has been freed since it
// was made (states_freed(), comm.h: MPI_Comm_free's delete callback, and
// MPI_Finalize), and dropped on its entry's next call. All of them are
// dropped at interpreter exit, by an atexit function that runs before
// mpi4py's MPI_Finalize (drop_kept_calls), while Python and MPI still work.
struct KeptCall {
  py::object kwnames;  // held: compared by address
  Py_ssize_t nargs = 0;
  Py_ssize_t count = 0;  // nargs and keywords
  std::uint64_t generation = 0;
  std::uint64_t freed = 0;  // states_freed() when made
  KeptArg args[kMaxParams];
  py::handle comm;  // the communicator argument (one of args')
  const MPI_Comm* comm_handle = nullptr;
  std::unique_ptr<PreparedCall> call;

  bool stale() const { return freed != states_freed(); }

  bool matches(PyObject* const* given, Py_ssize_t n, PyObject* names, std::byte** buffers) const {
    if (n != nargs || !same_names(names, kwnames.ptr()) || generation != selection_generation() ||
        stale())
      return false;
    for (Py_ssize_t i = 0; i < count; ++i)
      if (!args[i].matches(given[i], buffers)) return false;
    return true;
  }
};

// What one entry needs; owned by its Python object (EntryObject).
struct Entry {
  EntrySpec spec;
  std::vector<py::object> names;  // interned parameter names
  std::string name;
  std::vector<int> buffer_of;  // per parameter: its index in spec.buffers, or -1
  std::unique_ptr<KeptCall> kept;
};

// The entries that may keep a call (EntrySpec::prepare), for
// drop_kept_calls; read and written with the GIL held.
std::vector<Entry*>& keeping_entries() {
  static auto* entries = new std::vector<Entry*>;  // never destroyed (no static destructor)
  return *entries;
}

int param_index(const Entry& e, PyObject* keyword) {
  for (std::size_t i = 0; i < e.names.size(); ++i)  // call sites pass interned names
    if (e.names[i].ptr() == keyword) return static_cast<int>(i);
  for (std::size_t i = 0; i < e.names.size(); ++i)
    if (PyUnicode_Compare(e.names[i].ptr(), keyword) == 0) return static_cast<int>(i);
  PyErr_Clear();
  return -1;
}

[[noreturn]] void signature_error(const Entry& e, const std::string& what) {
  throw py::type_error(e.name + "() " + what);
}

// The **options dict of a call without other keywords: read, never written.
py::handle no_options() {
  static const py::handle empty = py::dict().release();
  return empty;
}

// The arguments in parameter order (into `out`, all null on entry), defaults
// filled in, and **options last when the signature has it. `extra` owns the
// options dict of this call.
void bind(const Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
          py::handle* out, py::object& extra) {
  const std::size_t n = e.spec.params.size();
  if (nargs > e.spec.positional)
    signature_error(e, "takes at most " + std::to_string(e.spec.positional) +
                           " positional arguments (" + std::to_string(nargs) + " given)");
  for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
    const int i = param_index(e, keyword);
    if (i >= 0 && out[i])
      signature_error(e,
                      "got multiple values for argument '" + std::string(py::str(keyword)) + "'");
    if (i >= 0) {
      out[i] = args[nargs + k];
    } else if (e.spec.keywords) {
      if (!extra) extra = py::dict();
      if (PyDict_SetItem(extra.ptr(), keyword, args[nargs + k]) < 0) throw py::error_already_set();
    } else {
      signature_error(e,
                      "got an unexpected keyword argument '" + std::string(py::str(keyword)) + "'");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!out[i]) out[i] = e.spec.params[i].default_value;
    if (!out[i])
      signature_error(e, "missing required argument '" + std::string(e.spec.params[i].name) + "'");
  }
  if (e.spec.keywords) out[n] = extra ? py::handle(extra) : no_options();
}

// The index of `param`'s address in PreparedCall::run's buffers; -1 for
// any other parameter (and for -1: one of **options).
int buffer_index(const Entry& e, int param) {
  return param >= 0 ? e.buffer_of[static_cast<std::size_t>(param)] : -1;
}

// An mpi4py Comm, or an mpi4py Op of a predefined op (a user op may be
// freed while kept, and its handle come back as another op: never kept).
// No other MPI object (Datatype, ...) is kept.
bool is_kept_mpi_handle(PyObject* o) {
  if (PyObject_TypeCheck(o, &PyMPIComm_Type)) return true;
  return PyObject_TypeCheck(o, &PyMPIOp_Type) && predefined_op_index(*PyMPIOp_Get(o)) > 0;
}

// Whether argument `o` for `param` can be kept: an array parameter's exact
// ndarray of a numeric dtype (or None); else an immutable object (None,
// bool, int, float, str), an mpi4py Comm or an mpi4py Op of a predefined
// op, whose handle is compared too. Checked before anything is made: most
// calls that cannot be kept (buffer specs) cost no allocation.
bool can_keep(const Entry& e, int param, PyObject* o) {
  ArrayState unused;
  if (buffer_index(e, param) >= 0 && o != Py_None) return array_state(o, unused);
  return o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
         PyUnicode_CheckExact(o) || is_kept_mpi_handle(o);
}

// `a` for an argument can_keep accepted.
void keep_arg(const Entry& e, int param, PyObject* o, KeptArg& a) {
  a.buffer = buffer_index(e, param);
  if (a.buffer >= 0 && o != Py_None) {
    array_state(o, a.array);
    a.descr = py::reinterpret_borrow<py::object>(a.array.descr);
    return;
  }
  a.object = py::reinterpret_borrow<py::object>(o);
  if (PyObject_TypeCheck(o, &PyMPIComm_Type)) {
    a.comm = PyMPIComm_Get(o);
    a.comm_value = *a.comm;
  } else if (PyObject_TypeCheck(o, &PyMPIOp_Type)) {
    a.op = PyMPIOp_Get(o);
    a.op_value = *a.op;
  }
}

// The call as a KeptCall (its array addresses into `buffers`), without its
// prepared call yet; null when an argument cannot be kept.
std::unique_ptr<KeptCall> keepable(const Entry& e, PyObject* const* args, Py_ssize_t nargs,
                                   PyObject* kwnames, py::handle comm, std::byte** buffers) {
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type)) return nullptr;  // refused by the intake
  const Py_ssize_t count = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  if (count > static_cast<Py_ssize_t>(kMaxParams)) return nullptr;  // many **options
  int params[kMaxParams];
  for (Py_ssize_t i = 0; i < count; ++i) {
    params[i] =
        i < nargs ? static_cast<int>(i) : param_index(e, PyTuple_GET_ITEM(kwnames, i - nargs));
    if (!can_keep(e, params[i], args[i])) return nullptr;
  }
  auto k = std::make_unique<KeptCall>();
  for (Py_ssize_t i = 0; i < count; ++i) keep_arg(e, params[i], args[i], k->args[i]);
  k->nargs = nargs;
  k->count = count;
  k->kwnames = py::reinterpret_borrow<py::object>(kwnames);
  k->generation = selection_generation();
  k->freed = states_freed();  // before the call: a free during it makes it stale
  k->comm = comm;             // one of the arguments, held by args' KeptArg
  k->comm_handle = PyMPIComm_Get(comm.ptr());
  k->matches(args, nargs, kwnames, buffers);  // true: fills `buffers`
  return k;
}

// Runs `k`'s call, then keeps it in place of the entry's (the last call
// is kept), unless it failed. The entry's kept call is out of the entry
// while it runs without the GIL: another thread's call meanwhile takes the
// long way.
void run_and_keep(Entry& e, std::unique_ptr<KeptCall> k, std::byte* const* buffers) {
  k->call->run(*k->comm_handle, buffers);
  e.kept = std::move(k);
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized;
}

// A call that repeats the entry's kept one, run again (its communicator
// into `comm`); false, having done nothing, for any other call (after
// MPI_Finalize too: the intake refuses it).
bool run_kept(Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
              py::handle& comm) {
  std::byte* buffers[kMaxParams];
  if (e.kept && e.kept->stale()) e.kept.reset();  // a communicator freed since: dropped
  if (!e.kept || !e.kept->matches(args, nargs, kwnames, buffers) || mpi_finalized()) return false;
  comm = e.kept->comm;  // (the caller holds it too)
  run_and_keep(e, std::move(e.kept), buffers);
  return true;
}

// A call whose arguments can be kept, which the collective prepares:
// prepared, run and kept; false, having done nothing, for any other.
bool run_prepared(Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                  const py::handle* bound) {
  std::byte* buffers[kMaxParams];
  std::unique_ptr<KeptCall> k = keepable(e, args, nargs, kwnames, bound[0], buffers);
  if (!k || !(k->call = e.spec.prepare(bound))) return false;
  run_and_keep(e, std::move(k), buffers);
  return true;
}

// ArgumentError as Python's shancoll.ArgumentError, naming the caller's
// rank (unless the message does already).
void raise_argument_error(const std::string& message, py::handle comm) {
  static const py::handle type =
      py::object(py::module_::import("shancoll._core").attr("ArgumentError")).release();
  const std::string rank = comm ? rank_of_caller(comm) : "?";
  std::string text = message;
  if (text.find("rank " + rank) == std::string::npos) text += " (on rank " + rank + ")";
  PyErr_SetString(type.ptr(), text.c_str());
}

bool is_argument_error(py::error_already_set& err) {
  static const py::handle type =
      py::object(py::module_::import("shancoll._core").attr("ArgumentError")).release();
  return err.matches(type);
}

PyObject* call_entry(Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  py::handle bound[kMaxParams + 1];
  try {
    if (e.spec.prepare && run_kept(e, args, nargs, kwnames, bound[0])) return Py_NewRef(Py_None);
    py::object extra;  // a dict only when there are options (no allocation for most calls)
    bind(e, args, nargs, kwnames, bound, extra);
    if (e.spec.prepare && run_prepared(e, args, nargs, kwnames, bound)) return Py_NewRef(Py_None);
    return e.spec.run(bound).release().ptr();
  } catch (const ArgumentError& err) {
    raise_argument_error(err.what(), bound[0]);
  } catch (py::error_already_set& err) {
    if (is_argument_error(err))
      raise_argument_error(py::str(err.value()), bound[0]);
    else
      err.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();  // the module's registered exceptions
  }
  return nullptr;
}

// The entry as a Python object: called by vectorcall, as a builtin function
// is, and documented by the Python function it stands for: `__wrapped__`,
// which inspect.signature() and help() follow, and its name, module and
// docstring. A descriptor that binds to nothing, so that inspect counts it a
// routine (help() then shows its signature and docstring).
struct EntryObject {
  PyObject ob_base;  // PyObject_HEAD
  vectorcallfunc vectorcall;
  Entry* entry;
  PyObject* wrapped;
};

EntryObject* entry_of(PyObject* self) { return reinterpret_cast<EntryObject*>(self); }

PyObject* entry_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf,
                           PyObject* kwnames) {
  return call_entry(*entry_of(self)->entry, args, PyVectorcall_NARGS(nargsf), kwnames);
}

void entry_dealloc(PyObject* self) {
  Entry* e = entry_of(self)->entry;
  auto& entries = keeping_entries();
  entries.erase(std::remove(entries.begin(), entries.end(), e), entries.end());
  delete e;
  Py_XDECREF(entry_of(self)->wrapped);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // a heap type: each instance holds it
}

PyObject* entry_repr(PyObject* self) {
  return PyUnicode_FromFormat("<shancoll function %s>", entry_of(self)->entry->name.c_str());
}

PyObject* entry_get(PyObject* self, PyObject*, PyObject*) { return Py_NewRef(self); }

PyObject* wrapped_attribute(PyObject* self, void* name) {
  return PyObject_GetAttrString(entry_of(self)->wrapped, static_cast<const char*>(name));
}

PyGetSetDef entry_getset[] = {
    {"__wrapped__", [](PyObject* self, void*) { return Py_NewRef(entry_of(self)->wrapped); },
     nullptr, nullptr, nullptr},
    {"__name__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__name__")},
    {"__qualname__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__qualname__")},
    {"__module__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__module__")},
    {"__doc__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__doc__")},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef entry_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(EntryObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyTypeObject* entry_type() {
  static PyTypeObject* type = [] {
    PyType_Slot slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(entry_dealloc)},
                           {Py_tp_repr, reinterpret_cast<void*>(entry_repr)},
                           {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                           {Py_tp_descr_get, reinterpret_cast<void*>(entry_get)},
                           {Py_tp_getset, entry_getset},
                           {Py_tp_members, entry_members},
                           {0, nullptr}};
    PyType_Spec spec{"shancoll._core.function", sizeof(EntryObject), 0,
                     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_IMMUTABLETYPE,
                     slots};
    auto* t = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
    if (!t) throw py::error_already_set();
    return t;
  }();
  return type;
}

}  // namespace

void drop_kept_calls() {
  std::vector<std::unique_ptr<KeptCall>> dropped;  // destroyed after the loop: their
  for (Entry* e : keeping_entries())               // objects' decrefs may run Python code
    if (e->kept) dropped.push_back(std::move(e->kept));
}

void bind_entries(py::module_& m) {
  m.def("_drop_kept_calls", &drop_kept_calls,
        "Drops the call each blocking entry keeps (the repeat path); run at interpreter exit.");
  // Python's atexit runs before the interpreter tears the modules down and
  // before mpi4py's MPI_Finalize (Py_AtExit: after both).
  py::module_::import("atexit").attr("register")(m.attr("_drop_kept_calls"));
}

py::object make_entry(py::function signature, EntrySpec spec) {
  if (spec.params.size() > kMaxParams) throw std::logic_error("make_entry: too many parameters");
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  auto e = std::make_unique<Entry>();
  e->buffer_of.assign(spec.params.size(), -1);
  for (std::size_t i = 0; i < spec.buffers.size(); ++i)
    e->buffer_of[static_cast<std::size_t>(spec.buffers[i])] = static_cast<int>(i);
  for (const EntryParam& p : spec.params) {
    PyObject* name = PyUnicode_InternFromString(p.name);
    if (!name) throw py::error_already_set();
    e->names.push_back(py::reinterpret_steal<py::object>(name));
  }
  e->spec = std::move(spec);
  e->name = py::str(signature.attr("__name__"));
  PyTypeObject* type = entry_type();
  auto* self = PyObject_New(EntryObject, type);  // holds a reference to its heap type
  if (!self) throw py::error_already_set();
  self->vectorcall = entry_vectorcall;
  if (e->spec.prepare) keeping_entries().push_back(e.get());
  self->entry = e.release();
  self->wrapped = signature.release().ptr();
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
}

}  // namespace shancoll::bindings
