package gpu

// awsNeuronType is HAMi's AWS Neuron row (HAMi
// pkg/device/awsneuron/device.go, GenerateResourceRequests,
// splitCoreRequest and InitAWSNeuronDevice): aws.amazon.com/neuron asks for
// that many devices; without it, aws.amazon.com/neuroncore asks for
// NeuronCores, at most 2 on one device or a multiple of 2 over several; a
// device-count request takes every core of its devices. No lock, no
// devices-to-allocate annotation; several devices are a run of unused ones
// by the node's instance type (FitNeuronRuns, Fit and graphSelect). Held devices in
// hami.io/aws-neuron-devices-allocated, whose cores are a bit mask of the
// device's NeuronCores). Its devices come from the node's capacity of
// aws.amazon.com/neuron, each with the capacity of aws.amazon.com/neuroncore
// divided evenly (GetNodeDevices); Filter also writes AWS_NEURON_IDS and its
// companions (PatchAnnotations).
func awsNeuronType() DeviceType {
	return DeviceType{
		Type: "AWSNeuron", Count: "aws.amazon.com/neuron", Cores: "aws.amazon.com/neuroncore",
		CountRule: CountFromCores, CoresPerDevice: 2, FitRule: FitNeuronRuns,
		Annotations: Annotations{
			RegisterFormat: RegisterNeuron, CoreMask: true, Extra: ExtraAWSNeuron,
			Allocated: "hami.io/aws-neuron-devices-allocated",
			UseUUID:   "aws.amazon.com/use-neuron-uuid", NoUseUUID: "aws.amazon.com/nouse-neuron-uuid",
		},
	}
}
