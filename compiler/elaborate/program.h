// The elaborated program: what every backend reads, and nothing else
// (Carbon's SemIR is the model). Built from the checked program with
// numbers for every generic:
//   - the instance tree of the root block: each block instance with its
//     params and states (static shapes) and its subs and sub-block arrays;
//   - function instances, one per (fn, generics, argument types), whose
//     bodies are typed trees: every expression has its dtype and static
//     shape, every call is resolved to a function instance or a primitive,
//     every implicit conversion (a literal taking its operand's dtype, the
//     join of a binary operation, an argument taking its parameter's dtype)
//     is an explicit `Cast`, and `static for` over a range is unrolled.
// The reference backend evaluates it (targets/reference), MLIRGen
// translates it (ir/mlirgen); neither re-types anything. Layers of an
// array share one function instance: a method's receiver is a value of
// the call, not part of the instance.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "elaborate/generics.h"
#include "sema/primitives.h"
#include "sema/program.h"
#include "sema/types.h"

namespace linnet::elab {

using sema::Scalar;

// Raised for an entry call that cannot be elaborated (arguments of the
// wrong shape, a where clause that fails); the message names the place.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TensorType {
  Scalar dtype = Scalar::F32;
  std::vector<int64_t> shape;
  // A literal or a dimension used as a value: takes the other operand's
  // dtype. Only the elaborator reads it; backends see the casts it made.
  bool weak = false;
  int rank() const { return static_cast<int>(shape.size()); }
  std::string str() const;  // `f32[2, 3]`
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
};

struct Instance;

// The type of a value: a tensor, a tuple, `none`, an option holding a
// value (`some(x)`), a sub-block, or an array of sub-blocks.
struct Type {
  enum Kind { Tensor, Tuple, None, Some, Block, Array } kind = Tensor;
  TensorType tensor;
  std::vector<Type> elems;           // Tuple; Some: elems[0]
  const Instance* block = nullptr;   // Block: a representative (element 0 of an array)
  std::string array;                 // Array: the member name in `block`'s parent
  const Instance* arrayOwner = nullptr;
  static Type of(TensorType t) {
    Type x;
    x.tensor = std::move(t);
    return x;
  }
  static Type unit() { return Type{Tuple, {}, {}, nullptr, {}, nullptr}; }
  bool isTensor() const { return kind == Tensor; }
  std::string key() const;  // equal for equal types; part of a function instance's key
};

struct Member {
  std::string name;
  TensorType type;
};

// One block instance of the model: `layers.3.attention`.
struct Instance {
  const syntax::BlockDecl* block = nullptr;
  const sema::Module* module = nullptr;
  Env env;
  std::string path;            // empty for the root
  int id = 0;                  // preorder index in the tree
  std::vector<Member> params;  // declaration order
  std::vector<Member> states;
  std::map<std::string, std::unique_ptr<Instance>> subs;
  std::map<std::string, std::vector<std::unique_ptr<Instance>>> arrays;
  const Member* param(const std::string& n) const;
  const Member* state(const std::string& n) const;
  std::string pathOf(const std::string& member) const { return path.empty() ? member : path + "." + member; }
};

struct FnInstance;

// A local value of a function instance: a parameter, a `let`, a `var`, a
// loop variable. Slots are numbered per function instance.
struct Slot {
  std::string name;
  Type type;
  bool mutableVar = false;  // a `var`
};
using SlotId = int;

enum class ExprKind : uint8_t {
  Constant,     // a scalar literal: `number` (float dtypes) or `integer`
  Local,        // slot `slot`
  Self,         // the function's receiver block (Block)
  Sub,          // sub-block or array `name` of block `operands[0]`
  Element,      // element `ints[0]` of the array operands[0] (derived programs name a layer's params so)
  Param,        // param `name` of block `operands[0]`
  State,        // state `name` of the receiver
  Unary,        // `unary` of operands[0]
  Binary,       // `binary` of operands[0], operands[1] (one dtype; comparisons give bool)
  Select,       // operands: cond, a, b (a and b of the result dtype)
  Cast,         // operands[0] to the result dtype
  Broadcast,    // operands[0] stretched to the result shape
  Reshape,      // operands[0], same elements, the result shape
  Permute,      // operands[0], `ints` the permutation
  Concat,       // operands along axis `ints[0]` (all of the result dtype)
  Iota,         // 0..n-1 along axis `ints[0]` of the result shape
  Matmul,       // operands[0] x operands[1]
  Reduce,       // `reduce` over axes `ints` of operands[0]; keepdims when `flag`
  GatherRows,   // rows operands[1] (integers) of table operands[0], clamped
  ScatterRows,  // the table (the result type) of zeros with rows operands[1] added at rows operands[0]
                // (integers, clamped), in order: a row lookup's cotangent (only derived programs have it)
  Slice,        // operands[0][items]: see `items`; index operands follow operands[0]
  Gather,       // operands[0] at one integer tensor per axis (operands 1..), clamped, broadcast
  Attention,    // operands q, k, v, scale (f32), mask: see the `attention` primitive
  AttentionRows,  // operands q, k, v, scale, mask: f32 attention's output [..L, G, Q, E] with each row's max
                  // and sum after its E values, [..L, G, Q, E + 2] (linnet.attention_rows); only in derived
                  // programs for a target that keeps it, as AttentionGrad:
  AttentionGrad,  // operands q, k, v, scale, mask, max, sum, dout: the tuple (dq, dk, dv) of f32 attention's
                  // reverse (linnet.attention_grad)
  WritePoints,  // operands[0] with point p of operands[1] (along axis `ints[0]`) at row operands[2][p],
                // position operands[3][p]; in order, outside points dropped
  WriteSlice,   // operands[0] with operands[1] written from position operands[2] (a scalar) along
                // axis `ints[0]`; what falls outside operands[0] is dropped
  Call,         // `callee`; operands: receiver (a Block, or null for a free fn), then the arguments
  Tuple,        // operands
  Some,         // operands[0]
  None,
  Unwrap,       // the value held by operands[0], a Some
};

// One axis of a Slice: a static slice `lo:hi` (kept), or the scalar index
// operand `index` (dropped; clamped into the axis).
struct SliceItem {
  bool slice = true;
  int64_t lo = 0, hi = 0;
  int index = 0;  // into operands, for an index
};

struct Expr {
  ExprKind kind;
  Type type;
  SourceRange range;
  std::vector<const Expr*> operands;
  std::vector<int64_t> ints;
  std::string name;
  sema::UnaryKind unary{};
  sema::BinaryKind binary{};
  sema::ReduceKind reduce{};
  bool flag = false;
  double number = 0;
  int64_t integer = 0;
  SlotId slot = -1;
  const FnInstance* callee = nullptr;
  std::vector<SliceItem> items;
  const Expr* operand(size_t k) const { return operands.at(k); }
};

enum class StmtKind : uint8_t {
  Let,          // slot = value (`let`, a comprehension, a `var`)
  LetTuple,     // slots = the elements of a tuple value
  Assign,       // slot = value (a `var`)
  AssignState,  // the receiver's state `name` = value (of the state's type)
  Return,       // value, or none for `()`
  Eval,         // value, for its effects
  ForArray,     // for slot in the array `value`: body, once per element
  While,        // while value: body
};

struct Stmt;
using Body = std::vector<const Stmt*>;

struct Stmt {
  StmtKind kind;
  SourceRange range;
  const Expr* value = nullptr;
  SlotId slot = -1;
  std::vector<SlotId> slots;           // LetTuple
  std::string name;                    // AssignState
  const syntax::Ident* binds = nullptr;  // Let, LetTuple: the name as written (for watches)
  std::vector<const syntax::Ident*> bindsEach;
  Body body;                           // ForArray, While
  // ForArray, While: the `var`s in scope, which the body may assign.
  std::vector<SlotId> varsInScope;
  // ForArray: the elements last to first (a derived gradient's reverse
  // sweep over layers, compiler/autodiff).
  bool reverse = false;
  // While: the number of times the body runs, where it is known when the
  // loop is made (a derived gradient's loop over chunks, compiler/autodiff),
  // so that code can count instead of reading the condition; -1 otherwise.
  // Such a loop's `slot` is its i32 counter, 0 in the first iteration.
  int64_t tripCount = -1;
};

struct FnInstance {
  const syntax::FnDecl* decl = nullptr;
  const sema::Module* module = nullptr;
  // The receiver's block instance for typing (element 0 for a layer), or
  // null for a free fn. At run time the call supplies the receiver.
  const Instance* self = nullptr;
  Env env;
  std::string key;
  std::vector<SlotId> params;
  std::vector<Slot> slots;
  Body body;
  Type result;
  std::vector<std::unique_ptr<Expr>> exprs;  // the arena of body's expressions
  std::vector<std::unique_ptr<Stmt>> stmts;
};

// An entry elaborated for arguments of given types.
struct EntryInstance {
  const FnInstance* fn = nullptr;
  std::map<std::string, int64_t> generics;  // the entry's own, as bound
  std::vector<TensorType> inputs;           // the parameters' declared types
};

class Program {
 public:
  // The root block instantiated with the package's generics (nest.toml's
  // [generics] and --set). `program` must have been checked without errors.
  explicit Program(const sema::Program& program);
  ~Program();
  Program(const Program&) = delete;

  const sema::Program& source() const { return source_; }
  const Instance& root() const { return *root_; }
  // Every instance, in preorder (`id` indexes it).
  const std::vector<const Instance*>& instances() const { return instances_; }

  // Elaborates entry `name` for arguments of these types (a weak argument
  // is a literal that takes its parameter's dtype); `generics` gives entry
  // generics the arguments do not determine. Cached: equal requests give
  // the same instance. Throws Error for arguments that do not fit.
  EntryInstance entry(const std::string& name, const std::vector<TensorType>& args,
                      const std::map<std::string, int64_t>& generics = {});
  // The entry's parameter types with its generics bound from `generics`
  // (and their defaults): what to compile when no arguments are at hand.
  std::vector<TensorType> entryParams(const std::string& name,
                                      const std::map<std::string, int64_t>& generics) const;
  // The entry's declaration, or Error naming the root block's entries.
  const syntax::FnDecl& entryDecl(const std::string& name) const;

  std::string where(SourceRange r) const;  // `file:line:col`
  // Keeps a function instance that a later phase derived (autodiff's
  // gradient entries) alive as long as the program; one already adopted
  // under the same `key` is kept instead.
  const FnInstance& adopt(std::unique_ptr<FnInstance> fn);
  struct Builder;

 private:
  const sema::Program& source_;
  std::unique_ptr<Instance> root_;
  std::vector<const Instance*> instances_;
  std::map<std::string, std::unique_ptr<FnInstance>> fns_;
  std::map<std::string, EntryInstance> entries_;
};

// Whether `e` is a Permute that swaps exactly the last two axes (`permute(w,
// [1, 0])`, attention's `permute(k, [0, 1, 3, 2])`): a product with it reads
// the un-permuted operand row by row.
bool swapsLastTwoAxes(const Expr& e);

}  // namespace linnet::elab
