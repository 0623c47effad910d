"""What the static analysis knows about torch's (and the standard library's) API.

Only as much as value kinds need: which calls return tensors, masks, tuples or Python values,
which names are clocks, loggers, I/O or RNGs, and which GB id each variant was seen to raise
(torch 2.13, checked by ``bench/static/verify_gb_ids.py``). Data only.
"""

from __future__ import annotations


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Namespaces whose functions return tensors (unless listed below).
TENSOR_NS = (
    "torch",
    "torch.nn.functional",
    "torch.fft",
    "torch.linalg",
    "torch.special",
    "torch.nn.init",
)
TORCH_NON_TENSOR = words(
    """
    is_tensor is_storage is_floating_point is_complex numel is_grad_enabled
    is_inference_mode_enabled get_default_dtype device dtype Size finfo iinfo no_grad
    enable_grad inference_mode set_grad_enabled autocast manual_seed seed save load compile
    Generator get_rng_state set_rng_state is_autocast_enabled broadcast_shapes promote_types
    result_type can_cast set_default_dtype use_deterministic_algorithms
    """
)
TORCH_DATA_BOOL = {"equal", "allclose", "is_nonzero"}
TORCH_SEQ = words(
    """
    split chunk unbind meshgrid broadcast_tensors tensor_split hsplit vsplit dsplit sort
    topk kthvalue mode aminmax frexp std_mean var_mean lu qr svd eig eigh slogdet lstsq grad
    histogram
    """
)
TORCH_BOOL = words(
    """
    isnan isinf isfinite isneginf isposinf isreal isin isclose logical_and logical_or
    logical_not logical_xor eq ne gt ge lt le greater less greater_equal less_equal
    not_equal signbit
    """
)
# Tensor methods whose result is not a tensor.
METHOD_SCALAR = words(
    """
    size dim ndimension numel nelement element_size is_contiguous is_floating_point
    is_complex is_signed data_ptr stride storage_offset get_device item tolist
    untyped_storage is_set_to register_hook equal allclose is_nonzero __len__ is_pinned
    is_shared has_names
    """
)
METHOD_SEQ = words(
    """
    split chunk unbind tensor_split sort topk kthvalue mode aminmax split_with_sizes
    unflatten_dense_tensors hsplit vsplit
    """
)
METHOD_BOOL = words(
    """
    bool isnan isinf isfinite isneginf isposinf logical_and logical_or logical_not
    logical_xor eq ne gt ge lt le isclose signbit
    """
)
ATTR_SCALAR = words(
    """
    shape dtype device ndim is_cuda is_cpu is_meta requires_grad layout names is_leaf
    is_sparse is_quantized grad_fn itemsize nbytes
    """
)
ATTR_TENSOR = words(
    """
    T mT H mH data grad real imag values indices
    """
)
INT_PRODUCERS = words(
    """
    long int short argmax argmin argsort arange randint randperm bincount nonzero indices
    multinomial searchsorted bucketize
    """
)
# Layers whose constructor creates nn.Parameters (building one while tracing breaks: GB0264).
PARAM_LAYERS = words(
    """
    Linear LazyLinear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d
    ConvTranspose3d Embedding EmbeddingBag LayerNorm RMSNorm GroupNorm BatchNorm1d
    BatchNorm2d BatchNorm3d MultiheadAttention LSTM GRU RNN LSTMCell GRUCell RNNCell PReLU
    Transformer TransformerEncoderLayer TransformerDecoderLayer Parameter
    """
)
RNN_LAYERS = {"LSTM", "GRU", "RNN"}
PACK_FNS = {
    "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn.utils.rnn.pack_sequence",
}
CONTAINERS = {"ModuleList", "Sequential", "ModuleDict", "ParameterList", "ParameterDict"}
DYNAMIC_SHAPE_FNS = {
    "nonzero",
    "argwhere",
    "unique",
    "unique_consecutive",
    "masked_select",
    "bincount",
}
LOG_METHODS = words(
    """
    debug info warning warn error exception critical fatal log
    """
)
LOGGERISH = words(
    """
    logger log _logger _log LOGGER LOG logging_ _LOGGER
    """
)
WALL_CLOCK = words(
    """
    time time_ns perf_counter perf_counter_ns monotonic monotonic_ns process_time
    process_time_ns thread_time sleep localtime gmtime strftime ctime asctime
    """
)
NP_RANDOM_TRACED = words(
    """
    rand randn random random_sample sample normal uniform randint choice shuffle seed
    """
)
# Positional arguments after which a numpy.random call has a size (and returns an array).
NP_RANDOM_SIZE_POS = {"normal": 2, "uniform": 2, "randint": 2, "choice": 1}
IO_GB = {
    "builtins.open": "GB0059",
    "builtins.input": "GB0059",
    "torch.save": "GB0007",
    "torch.load": "GB0007",
    "pickle.dump": "GB0007",
    "pickle.dumps": "GB0007",
    "pickle.load": "GB0007",
    "pickle.loads": "GB0007",
    "json.dump": "GB0156",
    "json.dumps": "GB0156",
    "json.load": "GB0156",
    "json.loads": "GB0156",
    "sys.stdout.write": "GB0156",
    "sys.stderr.write": "GB0156",
    "sys.stdout.flush": "GB0156",
    "sys.stderr.flush": "GB0156",
    "numpy.save": "GB0294",
    "numpy.savez": "GB0294",
    "numpy.load": "GB0294",
    "numpy.savetxt": "GB0294",
    "numpy.loadtxt": "GB0294",
}
OS_IO = words(
    """
    exists isfile isdir getsize getmtime makedirs mkdir remove unlink listdir getpid getcwd
    system rename replace stat walk scandir rmdir popen
    """
)
FRAME_FNS = words(
    """
    inspect.currentframe inspect.stack inspect.getouterframes inspect.getframeinfo
    inspect.trace sys._getframe traceback.format_stack traceback.print_stack
    traceback.extract_stack
    """
)
# Library prefix -> GB id where it was verified (None: the reason varies with the function).
LIBRARIES = {
    "scipy.special": "GB0156",
    "scipy": None,
    "cv2": None,
    "sklearn": None,
    "skimage": None,
    "numba": None,
    "PIL": None,
    "pandas": None,
    "librosa": None,
    "zlib": "GB0007",
    "msgpack": "GB0156",
}
COMPILING_TRUE = {
    "torch.compiler.is_compiling",
    "torch.compiler.is_dynamo_compiling",
    "torch._dynamo.is_compiling",
    "torch._utils.is_compiling",
}
COMPILING_FALSE = {
    "torch.jit.is_scripting",
    "torch.jit.is_tracing",
    "torch.onnx.is_in_onnx_export",
}
MODULE_CHAIN = words(
    """
    eval train to cuda cpu float half double bfloat16
    """
)
# Exact names only: "TensorBox", "TensorType", ... are not tensors.
TENSOR_ANN = words(
    "Tensor FloatTensor LongTensor BoolTensor IntTensor HalfTensor DoubleTensor Parameter"
)
SCALAR_ANN = words(
    """
    int float bool str bytes None complex Optional Union list List tuple Tuple dict Dict
    Sequence Literal typing Size dtype device
    """
)


SHAPE_ONLY = words("flatten view reshape squeeze unsqueeze cpu detach contiguous")
