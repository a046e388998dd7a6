// MLIRGen's internals: a translator of the elaborated program
// (elaborate/program.h) into the `linnet` dialect, one handler per
// expression and statement kind. mlirgen.cpp holds entries, arguments,
// statements, loops and calls; mlirgen_exprs.cpp the expressions.
#pragma once

#include <fmt/format.h>

#include <optional>

#include "elaborate/runtime_value.h"
#include "ir/dialect.h"
#include "ir/mlirgen.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace linnet::ir {

using elab::Instance;
using sema::Scalar;

// A value while translating: a tensor (an SSA value of a static type), a
// tuple, an option, a sub-block or an array of them.
using Val = elab::RuntimeValue<mlir::Value>;

// The SSA values of the params and states of the instances a function sees.
struct FnCtx {
  std::map<const Instance*, std::map<std::string, mlir::Value>> params, states;
  // The root's sub-block arrays, stacked: `layers.*.mlp.up.weight` is one
  // tensor [Layers, ...] (see StackedArray).
  std::map<std::string, mlir::Value> stackedParams, stackedStates;
  mlir::Value layerIndex;  // inside a loop over a stacked array (an index)
};

struct Frame {
  const Instance* self = nullptr;
  FnCtx* fn = nullptr;
  std::vector<Val> slots;
  std::optional<Val> result;
};

// A generated function for a method of a stacked layer.
struct MethodFn {
  mlir::func::FuncOp op;
  int resultCount = 0;  // tensors of the method's result (a tuple gives several)
  bool tuple = false;
  std::vector<size_t> modifiedStates;  // indices into the layer's states, returned after the results
};

// A sub-block array of the root (`layers`), passed to compiled code as one
// tensor per member with a leading axis of the array's length, so that
// `static for layer in layers` runs as one loop over a single copy of the
// layer's code: compile time and code size do not grow with `Layers`.
// Element 0's instances stand for every element while generating.
struct StackedArray {
  std::string name;
  const std::vector<std::unique_ptr<Instance>>* elements = nullptr;
  struct Slot {
    const Instance* inst;  // in element 0's subtree
    std::string member;    // the param's or state's name in `inst`
    std::string path;      // `layers.*.attention.q_proj.weight`
    TensorSpec spec;       // one element's
  };
  std::vector<Slot> params, states;
};

// Where an entry's param or state argument comes from.
struct ArgRef {
  const Instance* inst = nullptr;  // a plain member of this instance, or
  std::string member;
  std::string stacked;  // a stacked one, by path
};

// What a loop carries from one iteration to the next: every `var` in
// scope (the body may assign it) and every state the function holds.
struct Carried {
  elab::SlotId slot = -1;          // a var, or
  const Instance* inst = nullptr;  // a state of this instance, or
  std::string name;                // (its member name, or a stacked state's path)
  bool stackedState = false;
};

struct MLIRGen::Impl {
  mlir::MLIRContext& ctx;
  elab::Program program;
  mlir::OpBuilder b;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<TensorSpec> params, states;
  std::vector<ArgRef> paramRefs, stateRefs;  // parallel to params and states
  std::vector<StackedArray> stacked;
  // Every instance of a stacked array's element k (k > 0 included), for
  // code outside a loop over it that names a layer (`Element k`, as derived
  // gradients do): the stacked tensor sliced at the constant k.
  struct ElementOf {
    size_t array = 0;  // in `stacked`
    int64_t index = 0;
    std::string rel;  // "" or ".attention", below the element
  };
  std::map<const Instance*, ElementOf> elementOf;
  std::map<const elab::FnInstance*, MethodFn> methods;
  std::map<std::string, int> symbolUses;
  mlir::Location loc;

  Impl(mlir::MLIRContext& c, const sema::Program& p);

  [[noreturn]] void fail(SourceRange at, const std::string& message) {
    throw GenError(fmt::format("{}: {}", program.where(at), message));
  }
  mlir::Location locOf(SourceRange r);

  // -- types (mlirgen_exprs.cpp)
  mlir::Type elem(Scalar s) { return elementType(ctx, s); }
  mlir::RankedTensorType tensorType(const elab::TensorType& t);
  mlir::RankedTensorType tensorType(Scalar s, const std::vector<int64_t>& shape);

  // -- expressions (mlirgen_exprs.cpp)
  Val eval(Frame& f, const elab::Expr& e);
  mlir::Value tensor(Frame& f, const elab::Expr& e, size_t operand) { return eval(f, *e.operand(operand)).t; }
  Val member(Frame& f, const elab::Expr& e);
  mlir::Value layerParam(Frame& f, const Instance* inst, const std::string& name, SourceRange at);
  mlir::Value constant(const elab::Expr& e);
  mlir::Value gatherRows(Frame& f, const elab::Expr& e);
  mlir::Value scatterRows(Frame& f, const elab::Expr& e);
  mlir::Value iota(Scalar dt, const std::vector<int64_t>& shape, int axis);

  // -- statements, loops and calls (mlirgen.cpp)
  void run(Frame& f, const elab::Body& body);
  void exec(Frame& f, const elab::Stmt& s);
  Val call(Frame& f, const elab::Expr& e);
  Val inlineFn(Frame& caller, const elab::FnInstance& fn, const Instance* self, std::vector<Val> args);
  Val callLayerMethod(Frame& caller, const elab::FnInstance& fn, StackedArray& sa, const std::vector<Val>& args,
                      SourceRange at);
  MethodFn emitLayerMethod(const elab::FnInstance& fn, StackedArray& sa, const std::vector<Val>& args);
  StackedArray* stackedOf(const Instance* inst);
  std::vector<Carried> carriedValues(Frame& f, const std::vector<elab::SlotId>& vars);
  mlir::Value getCarried(Frame& f, const Carried& c);
  void setCarried(Frame& f, const Carried& c, mlir::Value v);
  mlir::scf::ForOp beginFor(Frame& f, const std::vector<Carried>& carried, int64_t count, mlir::Location at);
  void endLoop(Frame& f, const std::vector<Carried>& carried, mlir::Operation* loop, mlir::Location at);
  void stackedLoop(Frame& f, const elab::Stmt& s, StackedArray& sa);
  void outlineLargeBody(mlir::scf::ForOp loop, const std::string& name);
  void whileLoop(Frame& f, const elab::Stmt& s);
  void countedLoop(Frame& f, const elab::Stmt& s);
  mlir::Value sliceAt(mlir::Value all, mlir::Value index, const TensorSpec& one);
  mlir::Value insertAt(mlir::Value one, mlir::Value all, mlir::Value index, const TensorSpec& spec);
  std::string uniqueSymbol(std::string base);
  static void flatten(const Val& v, std::vector<Val>& out);

  // -- entries and their arguments (mlirgen.cpp)
  void collectArguments();
  EntryInstance addEntry(const std::string& name, const std::vector<TensorSpec>& args,
                         const std::map<std::string, int64_t>& given);
  EntryInstance addGradient(const std::string& name, const std::vector<TensorSpec>& args,
                            const std::map<std::string, int64_t>& given, const std::vector<std::string>& wrt,
                            autodiff::Policy tape, int64_t lowRank, bool attentionKernel);
  elab::EntryInstance instantiate(const std::string& name, const std::vector<TensorSpec>& args,
                                  const std::map<std::string, int64_t>& given);
  // The C-callable function of `fn` (an entry, or a gradient derived from
  // one) taking `out.inputs`; fills in out.symbol and out.outputs.
  void emitEntryFunction(const elab::FnInstance& fn, const std::string& symbolBase, EntryInstance& out);
};

// A tensor's spec from an elaborated type.
inline TensorSpec specOf(std::string name, const elab::TensorType& t) { return {std::move(name), t.dtype, t.shape}; }

}  // namespace linnet::ir
