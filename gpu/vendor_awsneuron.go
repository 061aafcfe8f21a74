package gpu

// awsNeuronType is HAMi's AWS Neuron row (HAMi
// pkg/device/awsneuron/device.go, GenerateResourceRequests,
// splitCoreRequest and InitAWSNeuronDevice): aws.amazon.com/neuron asks for
// that many devices; without it, aws.amazon.com/neuroncore asks for
// NeuronCores, at most 2 on one device or a multiple of 2 over several. No
// lock, no devices-to-allocate annotation (held devices in
// hami.io/aws-neuron-devices-allocated). Its devices come from the node's
// capacity and instance type, which plancore does not decode: build them by
// hand.
func awsNeuronType() DeviceType {
	return DeviceType{
		Type: "AWSNeuron", Count: "aws.amazon.com/neuron", Cores: "aws.amazon.com/neuroncore",
		CountRule: CountFromCores, CoresPerDevice: 2,
		Annotations: Annotations{
			Allocated: "hami.io/aws-neuron-devices-allocated",
			UseUUID:   "aws.amazon.com/use-neuron-uuid", NoUseUUID: "aws.amazon.com/nouse-neuron-uuid",
		},
	}
}
