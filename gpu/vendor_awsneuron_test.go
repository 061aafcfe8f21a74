package gpu_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// cores is two NeuronCores for each of n devices.
func cores(n string) resource.Quantity {
	q := resource.MustParse(n)
	return *resource.NewQuantity(2*q.Value(), resource.DecimalSI)
}

// TestNeuronRunsFit restates HAMi's AWS Neuron Fit for several devices
// (graphSelect, continuousDeviceAvailable; pkg/device/awsneuron/
// device_test.go): a run of unused devices, aligned to its length on
// Trainium nodes, any start on Inferentia ones; one device or cores keep
// the usual checks.
func TestNeuronRunsFit(t *testing.T) {
	cases := []struct {
		name      string
		instance  string
		devices   string
		used      []int
		unhealthy []int
		limits    []string
		policy    string
		want      string
	}{
		{name: "mutex moves used device 2 first: the free positions 1-2 name it, HAMi gives it, plancore refuses", instance: "inf2.xlarge", devices: "4",
			used: []int{2}, policy: "mutex", limits: []string{"aws.amazon.com/neuron", "2"}, want: "1/4 NumaNotFit"},
		{name: "mutex, used device 3 first: positions 1-2 name free devices 1 and 2", instance: "inf2.xlarge", devices: "4",
			used: []int{3}, policy: "mutex", limits: []string{"aws.amazon.com/neuron", "2"}, want: "1,2"},
		{name: "four on trn1: the first aligned run", instance: "trn1.32xlarge", devices: "16", limits: []string{"aws.amazon.com/neuron", "4"}, want: "0,1,2,3"},
		{name: "four on trn1, device 1 used: the next aligned run", instance: "trn1.32xlarge", devices: "16", used: []int{1}, limits: []string{"aws.amazon.com/neuron", "4"},
			want: "4,5,6,7"},
		{name: "two on trn1 is no aligned shape", instance: "trn1.32xlarge", devices: "16", limits: []string{"aws.amazon.com/neuron", "2"}, want: "1/16 NumaNotFit"},
		{name: "four cores are two devices, so no shape on trn1", instance: "trn1.32xlarge", devices: "16", limits: []string{"aws.amazon.com/neuroncore", "4"},
			want: "1/16 NumaNotFit"},
		{name: "two on inf2: any run", instance: "inf2.48xlarge", devices: "12", unhealthy: []int{0}, limits: []string{"aws.amazon.com/neuron", "2"}, want: "1,2"},
		{name: "four cores on inf2: a run of two devices", instance: "inf2.48xlarge", devices: "12", used: []int{1}, limits: []string{"aws.amazon.com/neuroncore", "4"},
			want: "2,3"},
		{name: "no label: aligned", devices: "8", used: []int{0}, limits: []string{"aws.amazon.com/neuron", "8"}, want: "1/8 NumaNotFit"},
		{name: "one device keeps the usual checks", instance: "trn1.2xlarge", devices: "1", used: []int{0}, limits: []string{"aws.amazon.com/neuron", "1"},
			want: "1/1 CardInsufficientCore"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k8sNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
				"aws.amazon.com/neuron": resource.MustParse(tc.devices), "aws.amazon.com/neuroncore": cores(tc.devices)}}}
			if tc.instance != "" {
				k8sNode.Labels = map[string]string{"node.kubernetes.io/instance-type": tc.instance}
			}
			node, err := gpu.DecodeNode(k8sNode, gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if node.InstanceType != tc.instance {
				t.Fatalf("instance type %q", node.InstanceType)
			}
			for _, i := range tc.used {
				node.Devices[i].Used, node.Devices[i].UsedCores, node.Devices[i].CoresInUse = 1, 1, 1
			}
			for _, i := range tc.unhealthy {
				node.Devices[i].Healthy = false
			}
			pod := podWith(nil, []corev1.Container{ctr("c", rl(tc.limits...))})
			if tc.policy != "" {
				pod.Annotations = map[string]string{"hami.io/gpu-scheduler-policy": tc.policy}
			}
			nf := fitPod(t, node, pod)
			if got := firstContainerAnswer(nf, "aws-AWSNeuron-"); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
